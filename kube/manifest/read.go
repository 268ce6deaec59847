package manifest

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// file is one manifest file's name and content.
type file struct {
	name string
	data []byte
}

// readPath reads the manifest files at path (see the package documentation)
// in name order.
func readPath(path string) ([]file, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	if !info.IsDir() {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("manifests: %w", err)
		}
		return []file{{name: path, data: data}}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	var files []file
	for _, e := range entries {
		if !isManifestName(e.Name()) {
			continue
		}
		name := filepath.Join(path, e.Name())
		if info, err := os.Stat(name); err != nil || info.IsDir() {
			continue // dangling link or directory: not a manifest
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("manifests: %w", err)
		}
		files = append(files, file{name: name, data: data})
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	return files, nil
}

func isManifestName(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// contentHash identifies the names and contents of files.
func contentHash(files []file) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	for _, f := range files {
		binary.BigEndian.PutUint64(n[:], uint64(len(f.name)))
		h.Write(n[:])
		h.Write([]byte(f.name))
		binary.BigEndian.PutUint64(n[:], uint64(len(f.data)))
		h.Write(n[:])
		h.Write(f.data)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// decodeFiles decodes every file into one set of objects.
func decodeFiles(files []file) (*Objects, error) {
	objs := &Objects{}
	for _, f := range files {
		if err := objs.AddFile(f.name, f.data); err != nil {
			return nil, err
		}
	}
	return objs, nil
}
