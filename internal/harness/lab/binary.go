package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// ResponderPackage is the import path of the responder command.
const ResponderPackage = "github.com/sllbrd/sllbrd/internal/harness/lab/cmd/labresponder"

// ResponderEnv names an environment variable that may hold the path of a
// prebuilt labresponder (used when Options.ResponderBinary is empty).
const ResponderEnv = "SLLBRD_LAB_RESPONDER"

// responderBinary returns the labresponder executable, building it once per
// lab with `go build` (served from the build cache after the first time).
// The build runs in the current directory when it is inside the module, else
// in this source file's directory.
func (l *Lab) responderBinary(ctx context.Context) (string, error) {
	if l.opts.ResponderBinary != "" {
		return l.opts.ResponderBinary, nil
	}
	if p := os.Getenv(ResponderEnv); p != "" {
		return p, nil
	}
	out := filepath.Join(l.tmp, "labresponder")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	dirs := []string{""}
	if _, file, _, ok := runtime.Caller(0); ok {
		dirs = append(dirs, filepath.Dir(file))
	}
	var lastErr error
	for _, dir := range dirs {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ResponderPackage)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		msg, err := cmd.CombinedOutput()
		if err == nil {
			return out, nil
		}
		lastErr = fmt.Errorf("go build %s (in %q): %w: %s", ResponderPackage, dir, err, msg)
	}
	return "", fmt.Errorf("lab: no responder binary (set Options.ResponderBinary or $%s): %w", ResponderEnv, lastErr)
}
