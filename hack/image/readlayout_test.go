package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// image is a layout read back by readLayout, every digest checked.
type image struct {
	Index    index
	Manifest manifest
	Config   imageConfig
	Files    []file // the layer's entries, in archive order
}

// file is one entry of the layer.
type file struct {
	Header tar.Header
	Data   []byte
}

// readLayout reads the OCI layout in dir as a registry or runtime would and
// fails the test on any inconsistency: blob sizes and digests against their
// descriptors, the layer's diff_id against the uncompressed tar, one image
// in the index, a gzip header without name or time.
func readLayout(t *testing.T, dir string) image {
	t.Helper()
	var img image
	if got := readFile(t, filepath.Join(dir, "oci-layout")); string(got) != layoutFile {
		t.Fatalf("oci-layout = %s, want %s", got, layoutFile)
	}
	decode(t, readFile(t, filepath.Join(dir, "index.json")), &img.Index)
	if img.Index.SchemaVersion != 2 || img.Index.MediaType != mediaTypeIndex || len(img.Index.Manifests) != 1 {
		t.Fatalf("index.json: %+v, want one manifest in a schema 2 index", img.Index)
	}
	man := img.Index.Manifests[0]
	if man.MediaType != mediaTypeManifest {
		t.Fatalf("index manifest media type %q", man.MediaType)
	}
	decode(t, readBlob(t, dir, man), &img.Manifest)
	if img.Manifest.SchemaVersion != 2 || img.Manifest.MediaType != mediaTypeManifest ||
		img.Manifest.Config.MediaType != mediaTypeConfig || len(img.Manifest.Layers) != 1 ||
		img.Manifest.Layers[0].MediaType != mediaTypeLayer {
		t.Fatalf("manifest: %+v", img.Manifest)
	}
	decode(t, readBlob(t, dir, img.Manifest.Config), &img.Config)
	if len(img.Config.RootFS.DiffIDs) != 1 || img.Config.RootFS.Type != "layers" {
		t.Fatalf("config rootfs: %+v, want one layer", img.Config.RootFS)
	}
	raw := gunzip(t, readBlob(t, dir, img.Manifest.Layers[0]))
	if got := digestOf(raw); got != img.Config.RootFS.DiffIDs[0] {
		t.Fatalf("diff_id %s, but the uncompressed layer is %s", img.Config.RootFS.DiffIDs[0], got)
	}
	img.Files = untar(t, raw)
	want := []string{man.Digest, img.Manifest.Config.Digest, img.Manifest.Layers[0].Digest}
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, "sha256:"+e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("blobs/sha256 holds %q, want exactly the image's blobs %q", got, want)
	}
	return img
}

// readBlob reads the blob of d and checks its size and digest.
func readBlob(t *testing.T, dir string, d descriptor) []byte {
	t.Helper()
	if len(d.Digest) != len("sha256:")+64 || d.Digest[:7] != "sha256:" {
		t.Fatalf("digest %q: want sha256:<64 hex>", d.Digest)
	}
	data := readFile(t, filepath.Join(dir, "blobs", "sha256", d.Digest[7:]))
	if int64(len(data)) != d.Size {
		t.Fatalf("blob %s: %d bytes, descriptor says %d", d.Digest, len(data), d.Size)
	}
	if got := digestOf(data); got != d.Digest {
		t.Fatalf("blob %s has digest %s", d.Digest, got)
	}
	return data
}

func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" || zr.Comment != "" || zr.Extra != nil {
		t.Errorf("gzip header carries build data: time %v name %q comment %q extra %q", zr.ModTime, zr.Name, zr.Comment, zr.Extra)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip layer: %v", err)
	}
	return raw
}

func untar(t *testing.T, raw []byte) []file {
	t.Helper()
	var files []file
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("layer tar: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("layer %s: %v", h.Name, err)
		}
		files = append(files, file{Header: *h, Data: data})
	}
}

func decode(t *testing.T, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
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

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
