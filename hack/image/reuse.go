package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
)

// With -reuse, a build that would write what is already there keeps it:
// compressing the layer (seconds for sllbrd) is skipped when the inputs are
// those recorded beside the layout. The binary is still compiled, which the
// go command's cache makes cheap, because its bytes are the one exact
// summary of the sources, dependencies, toolchain and stamp it came from.

// inputs is the record -reuse keeps in <layout>.inputs.json: beside the
// layout, so the layout and the archive hold only the image.
type inputs struct {
	Key     string  `json:"key"`               // inputKey of the build
	Written written `json:"written"`           // what it wrote
	Archive string  `json:"archive,omitempty"` // digest of the archive written with it; empty: none
}

func inputsPath(layout string) string { return layout + ".inputs.json" }

// inputKey is the digest of everything the image is a function of: this
// program's own executable (the image code and its toolchain), the binary's
// bytes and the spec.
func inputKey(binary string, spec imageSpec) (string, error) {
	tool, err := toolDigest()
	if err != nil {
		return "", err
	}
	bin, _, err := fileDigest(binary)
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(struct {
		Tool, Binary string
		Spec         imageSpec
	}{tool, bin, spec})
	if err != nil {
		return "", err
	}
	return digestBytes(data), nil
}

// toolDigest is the digest of the running executable.
var toolDigest = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("own executable: %w", err)
	}
	d, _, err := fileDigest(exe)
	return d, err
})

// writeOrReuse keeps the layout and archive when the record beside the
// layout has the key of these inputs and they are intact, and otherwise
// writes them and the record. It returns why it wrote them (empty: reused).
func writeOrReuse(layout, archive, binary string, spec imageSpec) (written, string, error) {
	key, err := inputKey(binary, spec)
	if err != nil {
		return written{}, "", fmt.Errorf("inputs of %s: %w", layout, err)
	}
	rec := inputsPath(layout)
	w, why := reusable(rec, layout, archive, key)
	if why == nil {
		return w, "", nil
	}
	// The record goes first: a build that fails half way leaves none.
	if err := os.Remove(rec); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return written{}, "", err
	}
	if w, err = writeOutputs(layout, archive, binary, spec); err != nil {
		return written{}, "", err
	}
	in := inputs{Key: key, Written: w}
	if archive != "" {
		if in.Archive, _, err = fileDigest(archive); err != nil {
			return written{}, "", err
		}
	}
	data, err := json.Marshal(in)
	if err != nil {
		return written{}, "", err
	}
	if err := writeFileAtomic(rec, func(f *os.File) error { _, err := f.Write(data); return err }); err != nil {
		return written{}, "", err
	}
	return w, why.Error(), nil
}

// reusable returns what the layout holds when rec records key for it and
// the layout (every blob's digest) and the archive are what was written;
// else why not.
func reusable(rec, layout, archive, key string) (written, error) {
	data, err := os.ReadFile(rec)
	if errors.Is(err, fs.ErrNotExist) {
		return written{}, errors.New("no earlier build")
	}
	var in inputs
	if err == nil {
		err = strictJSON(data, &in)
	}
	if err != nil {
		return written{}, fmt.Errorf("record %s: %w", rec, err)
	}
	if in.Key != key {
		return written{}, errors.New("inputs changed")
	}
	var idx index
	if err := readJSON(filepath.Join(layout, "index.json"), &idx); err != nil {
		return written{}, err
	}
	if len(idx.Manifests) != 1 || !reflect.DeepEqual(idx.Manifests[0], in.Written.Manifest) {
		return written{}, fmt.Errorf("%s: index.json is not the recorded one", layout)
	}
	var man manifest
	if err := readJSON(blobPath(layout, in.Written.Manifest), &man); err != nil {
		return written{}, err
	}
	if len(man.Layers) != 1 || !reflect.DeepEqual(man.Layers[0], in.Written.Layer) {
		return written{}, fmt.Errorf("%s: the manifest is not the recorded one", layout)
	}
	for _, d := range []descriptor{in.Written.Manifest, man.Config, man.Layers[0]} {
		if got, size, err := fileDigest(blobPath(layout, d)); err != nil || got != d.Digest || size != d.Size {
			return written{}, fmt.Errorf("%s: blob %s is damaged or missing (%v)", layout, d.Digest, err)
		}
	}
	if archive != "" {
		got, _, err := fileDigest(archive)
		if err != nil || in.Archive == "" || got != in.Archive {
			return written{}, fmt.Errorf("archive %s is not the recorded one (%v)", archive, err)
		}
	}
	return in.Written, nil
}

// blobPath is where a layout keeps the blob of d ("" for a malformed
// digest, which no file matches).
func blobPath(layout string, d descriptor) string {
	hexSum, ok := strings.CutPrefix(d.Digest, "sha256:")
	if _, err := hex.DecodeString(hexSum); !ok || err != nil || len(hexSum) != 64 {
		return ""
	}
	return filepath.Join(layout, "blobs", "sha256", hexSum)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err == nil {
		err = strictJSON(data, v)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// fileDigest returns the sha256 digest and the size of a file.
func fileDigest(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), n, nil
}

func digestBytes(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
