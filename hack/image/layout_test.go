package main

import (
	"archive/tar"
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var testStamp = stamp{
	Version:  "v1.2.3-4-g0123456789ab-dirty",
	Revision: "0123456789abcdef0123456789abcdef01234567",
	Created:  time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
}

// The programs the tests pack: sllbrd, and another main package.
var (
	sllbrdProgram = program{Main: mainPackage, Binary: "sllbrd"}
	pauseProgram  = program{Main: "./internal/harness/node/cmd/pause", Binary: "pause"}
)

func testSpec(p program, arch string, s stamp) imageSpec {
	return imageSpec{Binary: p.Binary, Arch: arch, Created: s.Created, Labels: labels(s, p), Tag: s.tag()}
}

// fakeBinary writes a stand-in for the sllbrd binary with the given mode
// and modification time.
func fakeBinary(t *testing.T, mode os.FileMode, mtime time.Time) string {
	t.Helper()
	return fakeBinaryOf(t, "\x7fELF not really ", mode, mtime)
}

// fakeBinaryOf writes a stand-in binary made of content repeated.
func fakeBinaryOf(t *testing.T, content string, mode os.FileMode, mtime time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "binary")
	if err := os.WriteFile(path, bytes.Repeat([]byte(content), 4096), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // beyond the umask
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLayoutHasTheImageContract writes a layout around a stand-in binary and
// checks what runtimes and registries read: digests, config, labels, the
// files of the layer; for sllbrd and for another program.
func TestLayoutHasTheImageContract(t *testing.T) {
	for _, tc := range []struct {
		p    program
		arch string
	}{{sllbrdProgram, "amd64"}, {sllbrdProgram, "arm64"}, {pauseProgram, "amd64"}} {
		t.Run(tc.p.Binary+"-"+tc.arch, func(t *testing.T) {
			binary := fakeBinary(t, 0o755, time.Now())
			dir := t.TempDir()
			w, err := writeLayout(dir, testSpec(tc.p, tc.arch, testStamp), rootfs(tc.p.Binary, binary))
			if err != nil {
				t.Fatal(err)
			}
			img := readLayout(t, dir)
			if img.Index.Manifests[0].Digest != w.Manifest.Digest {
				t.Errorf("index names %s, writeLayout returned %s", img.Index.Manifests[0].Digest, w.Manifest.Digest)
			}
			got := checkImage(t, img, tc.p, tc.arch, testStamp)
			if !bytes.Equal(got, readFile(t, binary)) {
				t.Errorf("/%s in the layer differs from the binary", tc.p.Binary)
			}
		})
	}
}

// checkImage checks img against the image contract of program p for the
// architecture and stamp s, and returns the content of its binary.
func checkImage(t *testing.T, img image, p program, arch string, s stamp) []byte {
	t.Helper()
	c := img.Config
	created := s.Created.UTC().Format(time.RFC3339)
	if c.OS != "linux" || c.Architecture != arch || c.Created != created {
		t.Errorf("config os %q architecture %q created %q, want linux %q %q", c.OS, c.Architecture, c.Created, arch, created)
	}
	if want := (platform{Architecture: arch, OS: "linux"}); img.Index.Manifests[0].Platform == nil || *img.Index.Manifests[0].Platform != want {
		t.Errorf("index platform %+v, want %+v", img.Index.Manifests[0].Platform, want)
	}
	if got := img.Index.Manifests[0].Annotations[refNameAnnotation]; got != strings.ReplaceAll(s.Version, "+", "-") {
		t.Errorf("ref.name %q, want the version %q as a tag", got, s.Version)
	}
	if !slices.Equal(c.Config.Entrypoint, []string{"/" + p.Binary}) || c.Config.User != "0:0" {
		t.Errorf("entrypoint %q user %q, want [/%s] and 0:0", c.Config.Entrypoint, c.Config.User, p.Binary)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":    p.Binary,
		"org.opencontainers.image.source":   "https://github.com/sllbrd/sllbrd",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.version":  s.Version,
		"org.opencontainers.image.revision": s.Revision,
		"org.opencontainers.image.created":  created,
	}
	if p.Binary == "sllbrd" { // only sllbrd's image describes itself
		wantLabels["org.opencontainers.image.description"] = description
	}
	if !maps.Equal(c.Config.Labels, wantLabels) {
		t.Errorf("labels %v\nwant %v", c.Config.Labels, wantLabels)
	}
	if !maps.Equal(img.Manifest.Annotations, wantLabels) {
		t.Errorf("manifest annotations %v\nwant %v", img.Manifest.Annotations, wantLabels)
	}
	return checkFiles(t, img.Files, p.Binary, s.Created)
}

// checkFiles checks the layer's entries: exactly these, in name order, with
// these owners and modes, the epoch as time and no owner names, and users
// root and nonroot whose homes exist. It returns the content of /binary.
func checkFiles(t *testing.T, files []file, binary string, epoch time.Time) []byte {
	t.Helper()
	type wantEntry struct {
		name     string
		typ      byte
		mode     int64
		uid, gid int
	}
	want := []wantEntry{
		{"etc/", tar.TypeDir, 0o755, 0, 0},
		{"etc/group", tar.TypeReg, 0o644, 0, 0},
		{"etc/passwd", tar.TypeReg, 0o644, 0, 0},
		{"home/", tar.TypeDir, 0o755, 0, 0},
		{"home/nonroot/", tar.TypeDir, 0o700, 65532, 65532},
		{"root/", tar.TypeDir, 0o700, 0, 0},
		{binary, tar.TypeReg, 0o755, 0, 0},
		{"tmp/", tar.TypeDir, 0o1777, 0, 0},
	}
	slices.SortFunc(want, func(a, b wantEntry) int { return strings.Compare(a.name, b.name) })
	if len(files) != len(want) {
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = f.Header.Name
		}
		t.Fatalf("layer holds %q, want %d entries", names, len(want))
	}
	content := map[string][]byte{}
	for i, w := range want {
		h := files[i].Header
		if h.Name != w.name || h.Typeflag != w.typ || h.Mode != w.mode || h.Uid != w.uid || h.Gid != w.gid {
			t.Errorf("entry %d: %s type %c mode %o owner %d:%d, want %s type %c mode %o owner %d:%d",
				i, h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, w.name, w.typ, w.mode, w.uid, w.gid)
		}
		if !h.ModTime.Equal(epoch) || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() || h.Uname != "" || h.Gname != "" || len(h.PAXRecords) > 0 {
			t.Errorf("%s carries build-machine data: mtime %v (want %v) atime %v ctime %v owner %q:%q pax %v",
				h.Name, h.ModTime, epoch, h.AccessTime, h.ChangeTime, h.Uname, h.Gname, h.PAXRecords)
		}
		content[h.Name] = files[i].Data
	}
	users := colonFile(t, content["etc/passwd"], 7)
	groups := colonFile(t, content["etc/group"], 4)
	for name, id := range map[string]string{"root": "0", "nonroot": "65532"} {
		if u := users[name]; u == nil || u[2] != id || u[3] != id {
			t.Errorf("/etc/passwd %s: %q, want uid and gid %s", name, u, id)
		}
		if g := groups[name]; g == nil || g[2] != id {
			t.Errorf("/etc/group %s: %q, want gid %s", name, g, id)
		}
	}
	if u := users["nonroot"]; u != nil && u[5] != "/home/nonroot" {
		t.Errorf("nonroot's home %q, want /home/nonroot (owned by 65532 in the layer)", u[5])
	}
	return content[binary]
}

// colonFile parses /etc/passwd or /etc/group by the first field.
func colonFile(t *testing.T, data []byte, fields int) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		f := strings.Split(line, ":")
		if len(f) != fields {
			t.Fatalf("line %q: %d fields, want %d", line, len(f), fields)
		}
		if _, err := strconv.Atoi(f[2]); err != nil {
			t.Fatalf("line %q: id %q", line, f[2])
		}
		out[f[0]] = f
	}
	return out
}

// TestLayoutIgnoresTheBuildMachine writes the same image twice from binaries
// with the same bytes but other modes and times, into other directories, and
// wants identical blobs and archives; a different epoch must change them.
func TestLayoutIgnoresTheBuildMachine(t *testing.T) {
	build := func(mode os.FileMode, mtime time.Time, s stamp) (written, []byte) {
		binary := fakeBinary(t, mode, mtime)
		dir := filepath.Join(t.TempDir(), "layout")
		w, err := writeImage(dir, binary, testSpec(sllbrdProgram, "amd64", s))
		if err != nil {
			t.Fatal(err)
		}
		archive := filepath.Join(t.TempDir(), "image.tar")
		if err := writeArchive(dir, archive, s.Created); err != nil {
			t.Fatal(err)
		}
		return w, readFile(t, archive)
	}
	a, archiveA := build(0o755, time.Now(), testStamp)
	b, archiveB := build(0o700, time.Now().Add(-time.Hour), testStamp)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same inputs, different images:\n%+v\n%+v", a, b)
	}
	if !bytes.Equal(archiveA, archiveB) {
		t.Errorf("same inputs, different archives (%s, %s)", digestOf(archiveA), digestOf(archiveB))
	}
	later := testStamp
	later.Created = later.Created.Add(time.Second)
	if c, _ := build(0o755, time.Now(), later); c.Manifest.Digest == a.Manifest.Digest || c.Layer.Digest == a.Layer.Digest {
		t.Errorf("another epoch gave the same manifest or layer: %+v", c)
	}
}

// TestArchiveIsTheLayout checks the archive: the layout's files, byte for
// byte, under fixed modes and owner.
func TestArchiveIsTheLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	w, err := writeImage(dir, fakeBinary(t, 0o755, time.Now()), testSpec(sllbrdProgram, "arm64", testStamp))
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "new", "image.tar") // its directory is created
	if err := writeArchive(dir, archive, testStamp.Created); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range untar(t, readFile(t, archive)) {
		h := f.Header
		names = append(names, h.Name)
		wantMode := int64(0o644)
		if h.Typeflag == tar.TypeDir {
			wantMode = 0o755
		} else if !bytes.Equal(f.Data, readFile(t, filepath.Join(dir, filepath.FromSlash(h.Name)))) {
			t.Errorf("%s differs from the layout's file", h.Name)
		}
		if h.Mode != wantMode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || !h.ModTime.Equal(testStamp.Created) {
			t.Errorf("%s: mode %o owner %d:%d %q time %v", h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.ModTime)
		}
	}
	blobs := []string{w.Manifest.Digest, w.Layer.Digest}
	cfg := readLayout(t, dir).Manifest.Config.Digest
	blobs = append(blobs, cfg)
	slices.Sort(blobs)
	want := []string{"blobs/", "blobs/sha256/"}
	for _, d := range blobs {
		want = append(want, "blobs/sha256/"+strings.TrimPrefix(d, "sha256:"))
	}
	want = append(want, "index.json", "oci-layout")
	if !slices.Equal(names, want) {
		t.Errorf("archive holds %q\nwant %q", names, want)
	}
}

// TestReplaceLayoutKeepsOtherDirectories: -layout pointing at a directory
// that is not an OCI layout must not delete it.
func TestReplaceLayoutKeepsOtherDirectories(t *testing.T) {
	binary := fakeBinary(t, 0o755, time.Now())
	dir := t.TempDir()
	keep := filepath.Join(dir, "precious")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := writeImage(dir, binary, testSpec(sllbrdProgram, "amd64", testStamp)); err == nil {
		t.Fatal("wrote over a directory that is not an OCI layout")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the directory's file is gone: %v", err)
	}
	layout := filepath.Join(t.TempDir(), "layout")
	for range 2 { // the second replaces the first
		if _, err := writeImage(layout, binary, testSpec(sllbrdProgram, "amd64", testStamp)); err != nil {
			t.Fatal(err)
		}
	}
	readLayout(t, layout)
}

// TestTarSortsEntries: the order of the list given does not change the
// archive.
func TestTarSortsEntries(t *testing.T) {
	entries := rootfs("sllbrd", fakeBinary(t, 0o755, time.Now()))
	var want bytes.Buffer
	if err := writeTar(&want, entries, testStamp.Created); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(entries)
	var got bytes.Buffer
	if err := writeTar(&got, entries, testStamp.Created); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Error("reversed entries gave another archive")
	}
	checkFiles(t, untar(t, got.Bytes()), "sllbrd", testStamp.Created)
}

// TestDefaultImageIsPinned: sllbrd's image of the stand-in binary has the
// config and uncompressed layer `make image` wrote before other programs
// could be packed (the gzip stream, and so the manifest, depend on the Go
// toolchain's compress/flate; these two do not).
func TestDefaultImageIsPinned(t *testing.T) {
	dir := t.TempDir()
	if _, err := writeLayout(dir, testSpec(sllbrdProgram, "amd64", testStamp), rootfs("sllbrd", fakeBinary(t, 0o755, time.Now()))); err != nil {
		t.Fatal(err)
	}
	img := readLayout(t, dir)
	const (
		config = "sha256:736fac313f74fd6d9db49871986ea59bab22c24bcb1faf7f4480c9c1361b8f2d"
		diffID = "sha256:fbef1847f780cfac6ed9e613fc3349c474686348644c9b07f5ec2605d24f77e2"
	)
	if img.Manifest.Config.Digest != config || img.Config.RootFS.DiffIDs[0] != diffID {
		t.Errorf("config %s, diff_id %s; want %s and %s", img.Manifest.Config.Digest, img.Config.RootFS.DiffIDs[0], config, diffID)
	}
}
