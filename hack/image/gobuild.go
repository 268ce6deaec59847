package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// archPattern is what a GOARCH looks like. Go's architecture names are the
// OCI's; sllbrd builds for 64-bit ones (github.com/google/nftables does not
// compile for 32-bit), so no OCI variant is needed.
var archPattern = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

func validateArch(arch string) error {
	if !archPattern.MatchString(arch) {
		return fmt.Errorf("architecture %q: want a GOARCH such as amd64 or arm64", arch)
	}
	return nil
}

// buildBinary compiles the static binary of p for linux/arch into dir and
// returns its path. moduleDir is the repository root; version is stamped
// into main.version (the linker ignores -X of a variable p lacks).
func buildBinary(ctx context.Context, moduleDir, dir, arch, version string, p program) (string, error) {
	out := filepath.Join(dir, p.Binary)
	cmd := exec.CommandContext(ctx, "go", "build",
		"-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version="+version,
		"-o", out, p.Main)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s for linux/%s: %w: %s", p.Main, arch, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// moduleRoot is the directory of the main module's go.mod, as the go
// command sees it from the working directory.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the sllbrd module (go env GOMOD is %q): run from the repository", gomod)
	}
	return filepath.Dir(gomod), nil
}
