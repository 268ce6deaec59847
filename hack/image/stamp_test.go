package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestStampValidatesWhatItStamps: versions that would break -ldflags or an
// image tag, revisions that are not commit ids and bad epochs are refused
// with the value in the message; given values need no git.
func TestStampValidatesWhatItStamps(t *testing.T) {
	noGit := t.TempDir() // git would fail here: every value must come from the flags
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	good := stamp{Version: "v1.0.0+meta", Revision: strings.Repeat("ab", 20)}
	s, err := resolveStamp(context.Background(), noGit, good)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(1700000000, 0).UTC(); !s.Created.Equal(want) || s.Created.Location() != time.UTC {
		t.Errorf("created %v, want SOURCE_DATE_EPOCH %v in UTC", s.Created, want)
	}
	if s.tag() != "v1.0.0-meta" {
		t.Errorf("tag %q, want v1.0.0-meta", s.tag())
	}
	for _, bad := range []stamp{
		{Version: "v1 -X main.other=x", Revision: good.Revision},
		{Version: "'v1'", Revision: good.Revision},
		{Version: "-v1", Revision: good.Revision},
		{Version: good.Version, Revision: "HEAD"},
		{Version: good.Version, Revision: strings.Repeat("AB", 20)},
	} {
		if _, err := resolveStamp(context.Background(), noGit, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	for _, epoch := range []string{"yesterday", "-1", "1.5"} {
		t.Setenv("SOURCE_DATE_EPOCH", epoch)
		if _, err := resolveStamp(context.Background(), noGit, good); err == nil || !strings.Contains(err.Error(), epoch) {
			t.Errorf("SOURCE_DATE_EPOCH=%s: err %v, want a refusal naming it", epoch, err)
		}
	}
}

// TestStampFromGit: without flags, the stamp is git's view of HEAD and the
// epoch its commit time.
func TestStampFromGit(t *testing.T) {
	require.Programs(t, "git")
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "one"},
		{"tag", "v0.9.0"},
	} {
		if _, err := git(context.Background(), dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SOURCE_DATE_EPOCH", "") // restored after the test
	os.Unsetenv("SOURCE_DATE_EPOCH")
	s, err := resolveStamp(context.Background(), dir, stamp{})
	if err != nil {
		t.Fatal(err)
	}
	head, _ := git(context.Background(), dir, "rev-parse", "HEAD")
	if s.Version != "v0.9.0" || s.Revision != head {
		t.Errorf("stamp %+v, want version v0.9.0 and revision %s", s, head)
	}
	if d := time.Since(s.Created); d < 0 || d > time.Hour {
		t.Errorf("created %v, want the commit time (just now)", s.Created)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := git(context.Background(), dir, "add", "f"); err != nil {
		t.Fatal(err)
	}
	if s, err = resolveStamp(context.Background(), dir, stamp{}); err != nil || s.Version != "v0.9.0-dirty" {
		t.Errorf("staged change: version %q (%v), want v0.9.0-dirty", s.Version, err)
	}
}

func TestArchValidated(t *testing.T) {
	for arch, ok := range map[string]bool{"amd64": true, "arm64": true, "riscv64": true, "": false, "linux/amd64": false, "amd64 ": false} {
		if err := validateArch(arch); (err == nil) != ok {
			t.Errorf("validateArch(%q) = %v, want ok %v", arch, err, ok)
		}
	}
}
