package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestImageBuildIsReproducibleAndRuns does what `make image` does, twice,
// the second time with another umask, output directory and time, and wants
// the same image digest and archive bytes. It checks the image's contract
// (config, labels, files, digests), runs the /sllbrd taken out of the image
// and, with skopeo, reads the archive as a registry client would.
func TestImageBuildIsReproducibleAndRuns(t *testing.T) {
	require.Integration(t)
	require.Programs(t, "go", "git")
	t.Setenv("SOURCE_DATE_EPOCH", "") // the epoch is the commit time (restored after the test)
	os.Unsetenv("SOURCE_DATE_EPOCH")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	first := buildForTest(ctx, t, 0o022)
	second := buildForTest(ctx, t, 0o077) // go build writes a 0700 binary, the layout 0700 files
	if first.res.Manifest.Digest != second.res.Manifest.Digest {
		t.Errorf("two builds of the same tree: image digests %s and %s", first.res.Manifest.Digest, second.res.Manifest.Digest)
	}
	if a, b := digestOf(readFile(t, first.archive)), digestOf(readFile(t, second.archive)); a != b {
		t.Errorf("two builds of the same tree: archives %s and %s", a, b)
	}
	t.Logf("image %s: layer %d bytes compressed, %d uncompressed", first.res.Manifest.Digest, first.res.Layer.Size, first.res.LayerRawSize)

	root, err := moduleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := gitStampForTest(ctx, t, root)
	if first.res.stamp != want {
		t.Errorf("stamp %+v, want git's %+v", first.res.stamp, want)
	}
	img := readLayout(t, first.layout)
	if img.Index.Manifests[0].Digest != first.res.Manifest.Digest {
		t.Errorf("index names %s, build reported %s", img.Index.Manifests[0].Digest, first.res.Manifest.Digest)
	}
	binary := checkImage(t, img, sllbrdProgram, runtime.GOARCH, want)

	path := filepath.Join(t.TempDir(), "sllbrd")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, path, "-version").CombinedOutput()
	if err != nil || string(out) != "sllbrd "+want.Version+"\n" {
		t.Errorf("/sllbrd -version: %q (%v), want %q", out, err, "sllbrd "+want.Version+"\n")
	}
	if info, err := exec.CommandContext(ctx, "go", "version", "-m", path).Output(); err != nil ||
		!strings.Contains(string(info), "CGO_ENABLED=0") || !strings.Contains(string(info), "-trimpath=true") {
		t.Errorf("go version -m /sllbrd: %s (%v), want a static (CGO_ENABLED=0), -trimpath build", info, err)
	}

	t.Run("skopeo", func(t *testing.T) {
		require.Programs(t, "skopeo")
		checkWithSkopeo(ctx, t, first, img)
	})
	t.Run("pause", func(t *testing.T) { checkAnotherProgram(ctx, t, want) })
}

// checkAnotherProgram packs the pause command with -main, -name and
// -reuse, twice: the second build keeps the first's image, which has the
// contract of an image of the pause program.
func checkAnotherProgram(ctx context.Context, t *testing.T, want stamp) {
	dir := t.TempDir()
	layout := filepath.Join(dir, "pause-image")
	opts, err := parseOptions([]string{"-main", pauseProgram.Main, "-name", "localhost/sllbrd-pause", "-reuse",
		"-arch", runtime.GOARCH, "-layout", layout, "-archive", layout + ".tar"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	first, err := build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	second, err := build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if first.Reused || !second.Reused || second.Manifest.Digest != first.Manifest.Digest {
		t.Errorf("reused %v then %v, digests %s and %s: want a build, then the same image kept", first.Reused, second.Reused, first.Manifest.Digest, second.Manifest.Digest)
	}
	checkImage(t, readLayout(t, layout), pauseProgram, runtime.GOARCH, want)
}

type testBuild struct {
	res             result
	layout, archive string
}

// buildForTest runs build into a new directory under the given umask.
func buildForTest(ctx context.Context, t *testing.T, umask int) testBuild {
	t.Helper()
	dir := t.TempDir()
	b := testBuild{layout: filepath.Join(dir, "out", "layout"), archive: filepath.Join(dir, "out", "image.tar")}
	old := syscall.Umask(umask)
	defer syscall.Umask(old)
	opts, err := parseOptions([]string{"-arch", runtime.GOARCH, "-layout", b.layout, "-archive", b.archive}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if b.res, err = build(ctx, opts); err != nil {
		t.Fatal(err)
	}
	return b
}

// gitStampForTest asks git for what the image should carry (the caller
// has unset SOURCE_DATE_EPOCH).
func gitStampForTest(ctx context.Context, t *testing.T, dir string) stamp {
	t.Helper()
	run := func(args ...string) string {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	created, err := time.Parse(time.RFC3339, run("log", "-1", "--format=%cI"))
	if err != nil {
		t.Fatal(err)
	}
	return stamp{
		Version:  run("describe", "--tags", "--always", "--dirty", "--abbrev=12"),
		Revision: run("rev-parse", "HEAD"),
		Created:  created.UTC(),
	}
}

// checkWithSkopeo reads the archive and the layout with skopeo (an
// independent OCI implementation, the tool docs/deploy.md pushes with) and
// copies the archive as a push would: it verifies every blob's digest.
func checkWithSkopeo(ctx context.Context, t *testing.T, b testBuild, img image) {
	skopeo := func(args ...string) []byte {
		t.Helper()
		out, err := exec.CommandContext(ctx, "skopeo", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("skopeo %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	for _, ref := range []string{"oci-archive:" + b.archive, "oci:" + b.layout} {
		var inspect struct {
			Digest       string
			Architecture string
			Os           string
			Labels       map[string]string
			Layers       []string
		}
		if err := json.Unmarshal(skopeo("inspect", ref), &inspect); err != nil {
			t.Fatal(err)
		}
		if inspect.Digest != b.res.Manifest.Digest || inspect.Architecture != runtime.GOARCH || inspect.Os != "linux" ||
			len(inspect.Layers) != 1 || inspect.Layers[0] != b.res.Layer.Digest ||
			inspect.Labels["org.opencontainers.image.version"] != b.res.Version {
			t.Errorf("skopeo inspect %s: %+v, want digest %s, layer %s, version %s", ref, inspect, b.res.Manifest.Digest, b.res.Layer.Digest, b.res.Version)
		}
		var cfg imageConfig
		decode(t, skopeo("inspect", "--config", ref), &cfg)
		if !slices.Equal(cfg.Config.Entrypoint, []string{"/sllbrd"}) || !slices.Equal(cfg.RootFS.DiffIDs, img.Config.RootFS.DiffIDs) {
			t.Errorf("skopeo inspect --config %s: %+v", ref, cfg)
		}
	}
	copied := filepath.Join(t.TempDir(), "copy")
	skopeo("copy", "--quiet", "--preserve-digests", "oci-archive:"+b.archive, "oci:"+copied+":"+b.res.tag())
	var idx struct{ Manifests []descriptor }
	if err := json.Unmarshal(readFile(t, filepath.Join(copied, "index.json")), &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].Digest != b.res.Manifest.Digest {
		t.Fatalf("skopeo copy: index %+v, want the manifest %s", idx, b.res.Manifest.Digest)
	}
	var man manifest
	decode(t, readBlob(t, copied, idx.Manifests[0]), &man)
	for _, d := range append(man.Layers, man.Config) {
		readBlob(t, copied, d)
	}
}
