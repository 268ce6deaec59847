package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// stamp is what identifies a build: it goes into the binary (version) and
// into the image's labels.
type stamp struct {
	Version  string    // git describe, or -version
	Revision string    // the commit of HEAD, or -revision
	Created  time.Time // SOURCE_DATE_EPOCH, or the commit time of HEAD (UTC, whole seconds)
}

var (
	// versionPattern keeps the version usable in -ldflags (no spaces or
	// quotes) and, after '+' becomes '-', as an image tag.
	versionPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`)
	revisionPattern = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
)

// resolveStamp fills what the flags left empty from git (run in dir) and
// SOURCE_DATE_EPOCH, and validates the result.
func resolveStamp(ctx context.Context, dir string, s stamp) (stamp, error) {
	var err error
	if s.Version == "" {
		if s.Version, err = git(ctx, dir, "describe", "--tags", "--always", "--dirty", "--abbrev=12"); err != nil {
			return s, fmt.Errorf("version (set -version): %w", err)
		}
	}
	if s.Revision == "" {
		if s.Revision, err = git(ctx, dir, "rev-parse", "HEAD"); err != nil {
			return s, fmt.Errorf("revision (set -revision): %w", err)
		}
	}
	if s.Created.IsZero() {
		if s.Created, err = epoch(ctx, dir); err != nil {
			return s, err
		}
	}
	s.Created = s.Created.UTC().Truncate(time.Second)
	if !versionPattern.MatchString(s.Version) {
		return s, fmt.Errorf("version %q: want letters, digits and . _ + - only, at most 128", s.Version)
	}
	if !revisionPattern.MatchString(s.Revision) {
		return s, fmt.Errorf("revision %q: want a full lower-case hex commit id", s.Revision)
	}
	return s, nil
}

// tag is the version as an image tag (the tag grammar has no '+').
func (s stamp) tag() string { return strings.ReplaceAll(s.Version, "+", "-") }

// epoch is SOURCE_DATE_EPOCH (https://reproducible-builds.org/specs/source-date-epoch/)
// when set, else the committer time of HEAD.
func epoch(ctx context.Context, dir string) (time.Time, error) {
	if v, ok := os.LookupEnv("SOURCE_DATE_EPOCH"); ok {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil || sec < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: want a non-negative integer of seconds", v)
		}
		return time.Unix(sec, 0), nil
	}
	out, err := git(ctx, dir, "log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return time.Time{}, fmt.Errorf("epoch (set SOURCE_DATE_EPOCH): %w", err)
	}
	sec, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("commit time %q: %w", out, err)
	}
	return time.Unix(sec, 0), nil
}

// git runs git in dir and returns its trimmed standard output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(string(out)), nil
}
