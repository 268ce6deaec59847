package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// mainPackage is the package the image runs.
const mainPackage = "./cmd/sllbrd"

// target is the platform of the image.
type target struct {
	Arch    string // GOARCH, also the OCI architecture (Go's names are the OCI names)
	Variant string // OCI variant: "v6" or "v7" for arm (from GOARM), else empty
}

// newTarget validates arch and derives the variant; goarm is $GOARM (arm
// only; empty means Go's default, 7).
func newTarget(arch, goarm string) (target, error) {
	if arch == "" || strings.ContainsAny(arch, "/ ") {
		return target{}, fmt.Errorf("architecture %q: want a GOARCH such as amd64 or arm64", arch)
	}
	t := target{Arch: arch}
	if arch == "arm" {
		switch goarm = strings.SplitN(goarm, ",", 2)[0]; goarm {
		case "":
			t.Variant = "v7"
		case "6", "7":
			t.Variant = "v" + goarm
		default:
			return target{}, fmt.Errorf("GOARM %q: want 6 or 7", goarm)
		}
	}
	return t, nil
}

// buildBinary compiles the static sllbrd binary for t into dir and returns
// its path. moduleDir is the repository root; version is stamped into
// main.version.
func buildBinary(ctx context.Context, moduleDir, dir string, t target, version string) (string, error) {
	out := filepath.Join(dir, "sllbrd")
	cmd := exec.CommandContext(ctx, "go", "build",
		"-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version="+version,
		"-o", out, mainPackage)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+t.Arch)
	if t.Variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(t.Variant, "v"))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s for linux/%s: %w: %s", mainPackage, t.Arch, err, bytes.TrimSpace(stderr.Bytes()))
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
