package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestReuseKeepsOnlyWhatTheSameInputsMade writes with -reuse and checks
// when the outputs are kept (same binary bytes and spec, intact layout and
// archive) and when they are written again, and that a kept image is the
// one a fresh build makes.
func TestReuseKeepsOnlyWhatTheSameInputsMade(t *testing.T) {
	dir := t.TempDir()
	layout, archive := filepath.Join(dir, "pause-image"), filepath.Join(dir, "pause-image.tar")
	binary := fakeBinary(t, 0o755, time.Now())
	spec := testSpec(pauseProgram, "amd64", testStamp)
	pack := func(binary string, spec imageSpec, wantWhy string) written {
		t.Helper()
		w, why, err := writeOrReuse(layout, archive, binary, spec)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(why, wantWhy) || (wantWhy == "") != (why == "") {
			t.Fatalf("rebuilt because %q, want %q", why, wantWhy)
		}
		if got := readLayout(t, layout); got.Index.Manifests[0].Digest != w.Manifest.Digest {
			t.Fatalf("layout holds %s, reported %s", got.Index.Manifests[0].Digest, w.Manifest.Digest)
		}
		return w
	}
	first := pack(binary, spec, "no earlier build")
	before, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	// The same bytes under another mode and time are the same input.
	if again := pack(fakeBinary(t, 0o700, time.Now().Add(-time.Hour)), spec, ""); !reflect.DeepEqual(again, first) {
		t.Errorf("reused %+v, first %+v", again, first)
	}
	if after, err := os.Stat(archive); err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("a reused archive was written again (%v)", err)
	}
	fresh, err := writeImage(filepath.Join(t.TempDir(), "l"), binary, spec)
	if err != nil || !reflect.DeepEqual(fresh, first) {
		t.Errorf("a fresh build: %+v (%v), the reused one %+v", fresh, err, first)
	}

	other := fakeBinaryOf(t, "another binary ", 0o755, time.Now())
	if w := pack(other, spec, "inputs changed"); w.Layer.Digest == first.Layer.Digest {
		t.Error("another binary, the same layer")
	}
	pack(binary, spec, "inputs changed")
	later := spec
	later.Tag = "v2"
	pack(binary, later, "inputs changed")
	pack(binary, spec, "inputs changed")

	damage := func(path string) {
		t.Helper()
		if err := os.WriteFile(path, []byte("damaged"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	damage(archive)
	pack(binary, spec, "archive")
	damage(filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(first.Layer.Digest, "sha256:")))
	pack(binary, spec, "damaged")
	// A build without -reuse replaces the layout the record describes.
	if _, err := writeOutputs(layout, archive, other, spec); err != nil {
		t.Fatal(err)
	}
	pack(binary, spec, "not the recorded one")
	pack(binary, spec, "")
	damage(inputsPath(layout))
	pack(binary, spec, "record")
}

// TestReuseWithoutArchive: a layout alone is reused, and asking for an
// archive later writes it.
func TestReuseWithoutArchive(t *testing.T) {
	dir := t.TempDir()
	layout, archive := filepath.Join(dir, "l"), filepath.Join(dir, "a.tar")
	binary := fakeBinary(t, 0o755, time.Now())
	spec := testSpec(sllbrdProgram, "arm64", testStamp)
	for i, step := range []struct{ archive, why string }{{"", "no earlier build"}, {"", ""}, {archive, "archive"}, {archive, ""}} {
		_, why, err := writeOrReuse(layout, step.archive, binary, spec)
		if err != nil || !strings.Contains(why, step.why) || (step.why == "") != (why == "") {
			t.Errorf("step %d: rebuilt because %q (%v), want %q", i, why, err, step.why)
		}
	}
	if _, err := os.Stat(archive); err != nil {
		t.Error(err)
	}
}
