package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLabelsMatchTheRepository: the source label is the module's
// repository and the licenses label is LICENSE's.
func TestLabelsMatchTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	gomod := string(readFile(t, filepath.Join(root, "go.mod")))
	module := regexp.MustCompile(`(?m)^module\s+(\S+)$`).FindStringSubmatch(gomod)
	if module == nil || sourceURL != "https://"+module[1] {
		t.Errorf("source label %q, module %q", sourceURL, module)
	}
	lic := string(readFile(t, filepath.Join(root, "LICENSE")))
	if license != "Apache-2.0" || !strings.Contains(lic, "Apache License") || !strings.Contains(lic, "Version 2.0, January 2004") {
		t.Errorf("licenses label %q does not name LICENSE's license", license)
	}
}

// TestDeployNamesTheImage: every sllbrd image deploy/ runs is
// imageRepository at a release tag (vMAJOR.MINOR.PATCH, the version `make
// image` stamps on a tagged commit) or a digest, never a moving tag such as
// latest (docs/deploy.md, "Image").
func TestDeployNamesTheImage(t *testing.T) {
	imageLine := regexp.MustCompile(`(?m)^\s*(?:-\s*)?image:\s*["']?([^\s"'#]+)`)
	policy := regexp.MustCompile(`^` + regexp.QuoteMeta(imageRepository) + `(:v\d+\.\d+\.\d+|@sha256:[0-9a-f]{64})$`)
	found := 0
	err := filepath.WalkDir(filepath.Join("..", "..", "deploy"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return err
		}
		for _, m := range imageLine.FindAllStringSubmatch(string(readFile(t, path)), -1) {
			if !strings.Contains(m[1], "sllbrd") {
				continue // not sllbrd's image (an example workload)
			}
			found++
			if !policy.MatchString(m[1]) {
				t.Errorf("%s: image %s, want %s:vX.Y.Z or %s@sha256:...", path, m[1], imageRepository, imageRepository)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("deploy/ runs no sllbrd image")
	}
}
