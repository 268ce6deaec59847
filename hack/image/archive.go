package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// writeArchive writes the OCI layout in layoutDir as an OCI archive (a tar
// of the layout, the format of skopeo's and podman's oci-archive:) to path,
// replacing it atomically. Entries have fixed modes and owner and mtime as
// their time.
func writeArchive(layoutDir, path string, mtime time.Time) error {
	var entries []entry
	err := filepath.WalkDir(layoutDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == layoutDir {
			return err
		}
		rel, err := filepath.Rel(layoutDir, p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			entries = append(entries, entry{Name: filepath.ToSlash(rel) + "/", Mode: 0o755})
		case d.Type().IsRegular():
			entries = append(entries, entry{Name: filepath.ToSlash(rel), Mode: 0o644, From: p})
		default:
			return fmt.Errorf("%s: not a file or directory", p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read layout %s: %w", layoutDir, err)
	}
	return writeFileAtomic(path, func(f *os.File) error { return writeTar(f, entries, mtime) })
}

// writeFileAtomic writes path through a temporary file in its directory
// that replaces it only when write succeeded.
func writeFileAtomic(path string, write func(*os.File) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// replaceLayout moves the finished layout in tmp to dir. An existing dir is
// removed first only if it is an OCI layout (holds oci-layout) or empty, so
// a mistyped -layout cannot delete anything else.
func replaceLayout(tmp, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	} else if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s exists and is not an OCI layout: not replacing it: %w", dir, err)
	}
	return os.Rename(tmp, dir)
}
