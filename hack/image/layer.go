package main

import (
	"archive/tar"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// The users of the image, as in distroless: sllbrd runs as root (it needs
// NET_ADMIN, NET_RAW and NET_BIND_SERVICE, which Kubernetes does not give a
// non-root process, docs/deploy.md); nonroot is there for a pod that sets
// runAsUser: 65532 (a subcommand without capabilities).
const (
	nonrootID = 65532
	passwd    = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
)

// entry is one file or directory of a tar archive.
type entry struct {
	Name     string // path without a leading "/"; a directory's ends in "/"
	Mode     int64  // permission bits, with the sticky bit (01000) if any
	UID, GID int
	Data     []byte // a regular file's content, or
	From     string // the file on the build machine whose content (only) is copied
}

func (e entry) dir() bool { return strings.HasSuffix(e.Name, "/") }

// rootfs is the content of the image's single layer; binary is the
// executable to put at /<name>.
func rootfs(name, binary string) []entry {
	return []entry{
		{Name: "etc/", Mode: 0o755},
		{Name: "etc/group", Mode: 0o644, Data: []byte(group)},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Name: "home/", Mode: 0o755},
		{Name: "home/nonroot/", Mode: 0o700, UID: nonrootID, GID: nonrootID},
		{Name: "root/", Mode: 0o700},
		{Name: name, Mode: 0o755, From: binary},
		{Name: "tmp/", Mode: 0o1777},
	}
}

// writeTar writes entries to w in name order, each with mtime as its time
// and nothing of the build machine (owner names, access times, modes of
// the source files): the same entries give the same bytes.
func writeTar(w io.Writer, entries []entry, mtime time.Time) error {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b entry) int { return cmp.Compare(a.Name, b.Name) })
	tw := tar.NewWriter(w)
	for _, e := range sorted {
		if err := writeEntry(tw, e, mtime); err != nil {
			return fmt.Errorf("tar %s: %w", e.Name, err)
		}
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, e entry, mtime time.Time) error {
	h := &tar.Header{
		Name:    e.Name,
		Mode:    e.Mode,
		Uid:     e.UID,
		Gid:     e.GID,
		ModTime: mtime,
		Format:  tar.FormatUSTAR, // no PAX records: no access or change times
	}
	if e.dir() {
		h.Typeflag = tar.TypeDir
		return tw.WriteHeader(h)
	}
	h.Typeflag = tar.TypeReg
	if e.From == "" {
		h.Size = int64(len(e.Data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(e.Data)
		return err
	}
	f, err := os.Open(e.From)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", e.From)
	}
	h.Size = info.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("copy %s: %w", e.From, err)
	}
	return nil
}
