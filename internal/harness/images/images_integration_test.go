package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationBuildsTheNodeImages builds the three images with the real
// tool, has skopeo read each archive, runs each binary taken out of its
// layer, and builds again: every image is kept.
func TestIntegrationBuildsTheNodeImages(t *testing.T) {
	require.Integration(t)
	require.Programs(t, "go", "git", "skopeo", "sh")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir := t.TempDir()
	start := time.Now()
	s, err := Build(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built in %v: %+v", time.Since(start).Round(time.Millisecond), s)
	tag := strings.TrimPrefix(s.Sllbrd.Ref, SllbrdName+":")
	for _, im := range s.All() {
		if im.Reused || im.Ref != im.Name+":"+tag {
			t.Errorf("%+v: want a new build tagged %s", im, tag)
		}
		checkWithSkopeo(ctx, t, im, tag)
	}

	bin := t.TempDir()
	sllbrd := extract(t, s.Sllbrd.Archive, "sllbrd", bin)
	if out, err := exec.CommandContext(ctx, sllbrd, "-version").Output(); err != nil || !strings.HasPrefix(string(out), "sllbrd ") {
		t.Errorf("sllbrd -version: %q (%v)", out, err)
	}
	responder := extract(t, s.Responder.Archive, "labresponder", bin)
	if out, err := exec.CommandContext(ctx, responder, "-h").CombinedOutput(); err != nil || !strings.Contains(string(out), "-addr") {
		t.Errorf("labresponder -h: %q (%v), want its usage and exit status 0", out, err)
	}
	runPause(ctx, t, extract(t, s.Pause.Archive, "pause", bin))

	start = time.Now()
	again, err := Build(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built again in %v", time.Since(start).Round(time.Millisecond))
	for i, im := range again.All() {
		if was := s.All()[i]; !im.Reused || im.Digest != was.Digest || im.Ref != was.Ref {
			t.Errorf("second build %+v, first %+v: want the same image kept", im, was)
		}
	}
}

// checkWithSkopeo reads the archive with skopeo, an OCI implementation
// other than the tool.
func checkWithSkopeo(ctx context.Context, t *testing.T, im Image, tag string) {
	t.Helper()
	out, err := exec.CommandContext(ctx, "skopeo", "inspect", "oci-archive:"+im.Archive).Output()
	if err != nil {
		t.Fatalf("skopeo inspect %s: %v", im.Archive, err)
	}
	var got struct {
		Digest       string
		Architecture string
		Os           string
		Labels       map[string]string
		Layers       []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	title := strings.TrimSuffix(filepath.Base(im.Layout), "-image")
	if got.Digest != im.Digest || got.Architecture != runtime.GOARCH || got.Os != "linux" || len(got.Layers) != 1 ||
		got.Labels["org.opencontainers.image.title"] != title || got.Labels["org.opencontainers.image.version"] != tag {
		t.Errorf("skopeo inspect %s: %+v, want digest %s, one layer, title %s, version %s", im.Archive, got, im.Digest, title, tag)
	}
}

// runPause starts pause with SIGINT ignored (as a shell's trap leaves it
// across exec), so that the moment pause catches SIGINT is the moment its
// signal handling is set up; then SIGTERM must end it with status 0.
func runPause(ctx context.Context, t *testing.T, pause string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `trap "" INT; exec "$0"`, pause)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Kill() // by PID; a no-op once it has exited
		<-exited
	}()
	const sigint = 1 << (syscall.SIGINT - 1)
	for caught := uint64(0); caught&sigint == 0; {
		select {
		case <-exited:
			t.Fatalf("pause exited at start: %v", waitErr)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
		caught = sigCaught(t, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("pause after SIGTERM: %v, want exit status 0", waitErr)
		}
	case <-time.After(10 * time.Second):
		t.Error("pause still runs 10 s after SIGTERM")
	}
}

// sigCaught is the mask of signals pid has handlers for (SigCgt).
func sigCaught(t *testing.T, pid int) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return mask
		}
	}
	t.Fatalf("no SigCgt in /proc/%d/status", pid)
	return 0
}

// extract writes the file name of the archive's single layer into dir as
// an executable and returns its path.
func extract(t *testing.T, archive, name, dir string) string {
	t.Helper()
	blobs := untar(t, readFile(t, archive))
	var idx struct{ Manifests []struct{ Digest string } }
	if err := json.Unmarshal(blobs["index.json"], &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("%s: index.json %s (%v), want one manifest", archive, blobs["index.json"], err)
	}
	var man struct{ Layers []struct{ Digest string } }
	if err := json.Unmarshal(blobs[blobName(idx.Manifests[0].Digest)], &man); err != nil || len(man.Layers) != 1 {
		t.Fatalf("%s: manifest (%v), want one layer", archive, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blobs[blobName(man.Layers[0].Digest)]))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	data, ok := untar(t, raw)[name]
	if !ok {
		t.Fatalf("%s: no /%s in the layer", archive, name)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func blobName(digest string) string { return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:") }

// untar returns the regular files of a tar by name.
func untar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
