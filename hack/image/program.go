package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"strings"
)

// What the image says about itself.
const (
	// mainPackage is the package `make image` packs: sllbrd.
	mainPackage = "./cmd/sllbrd"
	// imageRepository is where sllbrd releases are pushed and what deploy/
	// names.
	imageRepository = "ghcr.io/sllbrd/sllbrd"
	sourceURL       = "https://github.com/sllbrd/sllbrd"
	license         = "Apache-2.0" // SPDX identifier of LICENSE
	description     = "Stateless, NAT-less L3/L4 load balancer and router for Kubernetes secondary networks (nfqueue, Maglev, BGP, BFD)"
)

// program is the main package an image runs.
type program struct {
	Main   string // the package, relative to the module root: ./cmd/sllbrd
	Binary string // its executable's name (the package's last element), at /<Binary> in the image
}

var (
	// mainPattern is a slash-separated relative package directory of this
	// module: no "..", no absolute path, nothing a flag or a shell reads.
	mainPattern = regexp.MustCompile(`^\./[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$`)
	// namePattern is a repository name of the distribution reference
	// grammar: an optional registry host (with port), then lower-case path
	// components joined by '.', '_', "__" or dashes.
	namePattern = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
)

// newProgram validates main and names its binary as go build would.
func newProgram(main string) (program, error) {
	if !mainPattern.MatchString(main) {
		return program{}, fmt.Errorf("main package %q: want a package directory of this module such as %s", main, mainPackage)
	}
	p := program{Main: main, Binary: path.Base(main)}
	for _, e := range rootfs(p.Binary, "") {
		if strings.TrimSuffix(e.Name, "/") == p.Binary && e.dir() {
			return program{}, fmt.Errorf("main package %s: its binary %s would replace the image's /%s", main, p.Binary, e.Name)
		}
	}
	return p, nil
}

// sllbrd reports whether p is sllbrd itself, whose image alone carries
// the description and is what deploy/ runs.
func (p program) sllbrd() bool { return p.Main == mainPackage }

// validateName checks an image repository name (without tag or digest).
func validateName(name string) error {
	if len(name) > 255 || !namePattern.MatchString(name) {
		return fmt.Errorf("image name %q: want a repository such as %s or localhost/sllbrd-pause (lower case, no tag)", name, imageRepository)
	}
	return nil
}

// checkMain asks the go command, in the module root, that p.Main is a main
// package: go build -o would write a package archive for any other.
func checkMain(ctx context.Context, moduleDir string, p program) error {
	cmd := exec.CommandContext(ctx, "go", "list", "-f", "{{.Name}}", p.Main)
	cmd.Dir = moduleDir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return fmt.Errorf("main package %s: go list: %w: %s", p.Main, err, strings.TrimSpace(string(stderr)))
	}
	if name := strings.TrimSpace(string(out)); name != "main" {
		return fmt.Errorf("main package %s: is package %s, not a command", p.Main, name)
	}
	return nil
}
