package multinet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// findPlugin returns the executable named typ in the directories of
// cniPath (CNI_PATH), the first that has it.
func findPlugin(typ, cniPath string) (string, error) {
	for _, dir := range filepath.SplitList(cniPath) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, typ)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("plugin %s not found in CNI_PATH %q", typ, cniPath)
}

// execPlugin runs plugin typ (found in CNI_PATH) with env and stdin and
// returns its stdout. A failure is a *PluginError when the plugin printed a
// CNI error, else an error with its exit status and stderr.
func execPlugin(ctx context.Context, typ, cniPath string, env []string, stdin []byte) ([]byte, error) {
	path, err := findPlugin(typ, cniPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		var e struct {
			Code    uint   `json:"code"`
			Msg     string `json:"msg"`
			Details string `json:"details"`
		}
		if json.Unmarshal(stdout.Bytes(), &e) == nil && (e.Code != 0 || e.Msg != "") {
			return nil, &PluginError{Plugin: typ, Code: e.Code, Msg: e.Msg, Details: e.Details}
		}
	}
	return nil, fmt.Errorf("plugin %s: %w: stdout %q, stderr %q", typ, err,
		strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()))
}
