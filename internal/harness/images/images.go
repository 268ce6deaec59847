package images

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The repositories the images are named in.
const (
	SllbrdName    = "ghcr.io/sllbrd/sllbrd" // what `make image` names, and deploy/ runs
	PauseName     = "localhost/sllbrd-pause"
	ResponderName = "localhost/sllbrd-responder"
)

// The main packages the images run, relative to the module root.
const (
	sllbrdMain    = "./cmd/sllbrd"
	pauseMain     = "./internal/harness/node/cmd/pause"
	responderMain = "./internal/harness/lab/cmd/labresponder"
)

// toolPackage is the image tool, named by import path so that it runs from
// any directory of the module.
const toolPackage = "github.com/sllbrd/sllbrd/hack/image"

// Image is one built image.
type Image struct {
	Name    string // repository, e.g. localhost/sllbrd-pause
	Ref     string // Name:tag, what pods and containerd's sandbox_image name
	Digest  string // the manifest's digest, sha256:<hex>
	Archive string // the OCI archive
	Layout  string // the OCI layout directory
	Reused  bool   // an earlier build from the same inputs was kept
}

// Set is the images of the test node.
type Set struct {
	Sllbrd    Image // cmd/sllbrd, as `make image` makes it
	Pause     Image // the pod sandbox
	Responder Image // the test application, entrypoint /labresponder
}

// All lists the images of s, sllbrd first.
func (s Set) All() []Image { return []Image{s.Sllbrd, s.Pause, s.Responder} }

// Options say where and how to build.
type Options struct {
	// Dir receives the layouts, the archives and the tool's records; it is
	// created. Required.
	Dir string
	// Arch is the images' GOARCH (default: this program's).
	Arch string
	// Version overrides the version, as VERSION does for `make image`
	// (default: git describe).
	Version string
	// ModuleDir is a directory of the sllbrd module to build from
	// (default: the current directory).
	ModuleDir string
}

// Build builds the three images into o.Dir, each at most once, keeping
// those whose inputs did not change.
func Build(ctx context.Context, o Options) (Set, error) {
	if o.Dir == "" {
		return Set{}, errors.New("images: no directory")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return Set{}, fmt.Errorf("images: %w", err)
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Set{}, fmt.Errorf("images: %w", err)
	}
	unlock, err := lock(ctx, filepath.Join(dir, ".lock"))
	if err != nil {
		return Set{}, err
	}
	defer unlock()

	var s Set
	st := stamp{Version: o.Version}
	if s.Sllbrd, st, err = build(ctx, o, job{sllbrdMain, SllbrdName, dir}, st); err != nil {
		return Set{}, err
	}
	if s.Pause, _, err = build(ctx, o, job{pauseMain, PauseName, dir}, st); err != nil {
		return Set{}, err
	}
	if s.Responder, _, err = build(ctx, o, job{responderMain, ResponderName, dir}, st); err != nil {
		return Set{}, err
	}
	return s, nil
}

// job is one image to build.
type job struct {
	main, name, dir string
}

func (j job) layout() string { return filepath.Join(j.dir, filepath.Base(j.main)+"-image") }

// stamp is what identifies a build. Empty fields are left to the tool;
// the stamp it reports is complete.
type stamp struct {
	Version, Revision string
	Created           time.Time
}

// args are the tool's flags for j under st.
func (j job) args(arch string, st stamp) []string {
	args := []string{"run", toolPackage, "-json", "-reuse", "-main", j.main, "-name", j.name, "-arch", arch,
		"-layout", j.layout(), "-archive", j.layout() + ".tar"}
	if st.Version != "" {
		args = append(args, "-version", st.Version)
	}
	if st.Revision != "" {
		args = append(args, "-revision", st.Revision)
	}
	return args
}

// env is the tool's environment: GOOS and GOARCH would build the tool
// itself for the target (the image's architecture is -arch), and a stamp's
// epoch is SOURCE_DATE_EPOCH.
func env(st stamp) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "GOOS" && k != "GOARCH" && (k != "SOURCE_DATE_EPOCH" || st.Created.IsZero()) {
			out = append(out, kv)
		}
	}
	if !st.Created.IsZero() {
		out = append(out, "SOURCE_DATE_EPOCH="+strconv.FormatInt(st.Created.Unix(), 10))
	}
	return out
}

// report is the part of the tool's -json output this package reads.
type report struct {
	Ref      string `json:"ref"`
	Digest   string `json:"digest"`
	Layout   string `json:"layout"`
	Archive  string `json:"archive"`
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Created  string `json:"created"`
	Reused   bool   `json:"reused"`
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// build runs the tool for j and returns the image and the complete stamp.
func build(ctx context.Context, o Options, j job, st stamp) (Image, stamp, error) {
	cmd := exec.CommandContext(ctx, "go", j.args(o.Arch, st)...)
	cmd.Dir = o.ModuleDir
	cmd.Env = env(st)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Image{}, st, fmt.Errorf("images: %s: %w: %s", j.main, err, bytes.TrimSpace(stderr.Bytes()))
	}
	img, st, err := parseReport(stdout.Bytes(), j)
	if err != nil {
		return Image{}, st, fmt.Errorf("images: %s: %w", j.main, err)
	}
	return img, st, nil
}

// parseReport reads the tool's report on j and checks that it is about
// the image asked for.
func parseReport(out []byte, j job) (Image, stamp, error) {
	var r report
	if err := json.Unmarshal(out, &r); err != nil {
		return Image{}, stamp{}, fmt.Errorf("report %q: %w", out, err)
	}
	img := Image{Name: j.name, Ref: r.Ref, Digest: r.Digest, Archive: r.Archive, Layout: r.Layout, Reused: r.Reused}
	created, err := time.Parse(time.RFC3339, r.Created)
	switch {
	case err != nil:
		return Image{}, stamp{}, fmt.Errorf("report: created: %w", err)
	case !strings.HasPrefix(r.Ref, j.name+":") || len(r.Ref) == len(j.name)+1:
		return Image{}, stamp{}, fmt.Errorf("report: reference %q, want %s:<tag>", r.Ref, j.name)
	case !digestPattern.MatchString(r.Digest):
		return Image{}, stamp{}, fmt.Errorf("report: digest %q", r.Digest)
	case r.Layout != j.layout() || r.Archive != j.layout()+".tar":
		return Image{}, stamp{}, fmt.Errorf("report: wrote %s and %s, want %s and %[3]s.tar", r.Layout, r.Archive, j.layout())
	case r.Version == "" || r.Revision == "":
		return Image{}, stamp{}, fmt.Errorf("report: no version or revision in %q", out)
	}
	return img, stamp{Version: r.Version, Revision: r.Revision, Created: created}, nil
}

// lock takes an exclusive flock on path, waiting while ctx lasts, and
// returns its release. The descriptor is close-on-exec: the tool's
// processes do not inherit the lock.
func lock(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("images: lock: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("images: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("images: waiting for %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
