package main

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Media types and fixed values of the OCI image spec v1.1.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
	layoutFile        = `{"imageLayoutVersion":"1.0.0"}`
	refNameAnnotation = "org.opencontainers.image.ref.name"
)

// The types below are the parts of the OCI image spec the image uses; the
// JSON is written by encoding/json, whose output is fixed by the field order
// here and sorted map keys.

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        descriptor        `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type imageConfig struct {
	Created      string    `json:"created"`
	Architecture string    `json:"architecture"`
	OS           string    `json:"os"`
	Config       runConfig `json:"config"`
	RootFS       rootFS    `json:"rootfs"`
	History      []history `json:"history"`
}

type runConfig struct {
	User       string            `json:"User"`
	Env        []string          `json:"Env"`
	Entrypoint []string          `json:"Entrypoint"`
	Labels     map[string]string `json:"Labels"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type history struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// imageSpec is everything of the image but its files.
type imageSpec struct {
	Binary  string // the executable's name: /<Binary> is the entrypoint
	Arch    string // GOARCH, the OCI architecture
	Created time.Time
	Labels  map[string]string // config labels, also the manifest's annotations
	Tag     string            // the index's org.opencontainers.image.ref.name
}

// entrypoint is the container's command: the binary at the root.
func (s imageSpec) entrypoint() []string { return []string{"/" + s.Binary} }

// runtime settings of the container.
var (
	user = "0:0"
	env  = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
)

// written describes a layout writeLayout wrote.
type written struct {
	Manifest     descriptor // as in index.json: its digest is the image digest
	Layer        descriptor
	LayerRawSize int64 // bytes of the uncompressed layer
}

// writeLayout writes an OCI image layout of one image (spec, one layer of
// files) into dir, which must be empty or missing.
func writeLayout(dir string, spec imageSpec, files []entry) (written, error) {
	store := blobStore{dir: filepath.Join(dir, "blobs", "sha256")}
	if err := os.MkdirAll(store.dir, 0o755); err != nil {
		return written{}, err
	}
	layer, diffID, rawSize, err := store.putLayer(files, spec.Created)
	if err != nil {
		return written{}, err
	}
	created := spec.Created.UTC().Format(time.RFC3339)
	cfg, err := store.putJSON(mediaTypeConfig, imageConfig{
		Created:      created,
		Architecture: spec.Arch,
		OS:           "linux",
		Config:       runConfig{User: user, Env: env, Entrypoint: spec.entrypoint(), Labels: spec.Labels},
		RootFS:       rootFS{Type: "layers", DiffIDs: []string{diffID}},
		History:      []history{{Created: created, CreatedBy: "make image (hack/image)"}},
	})
	if err != nil {
		return written{}, err
	}
	man, err := store.putJSON(mediaTypeManifest, manifest{
		SchemaVersion: 2,
		MediaType:     mediaTypeManifest,
		Config:        cfg,
		Layers:        []descriptor{layer},
		Annotations:   spec.Labels,
	})
	if err != nil {
		return written{}, err
	}
	man.Platform = &platform{Architecture: spec.Arch, OS: "linux"}
	man.Annotations = map[string]string{refNameAnnotation: spec.Tag}
	idx, err := json.Marshal(index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{man}})
	if err != nil {
		return written{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), idx, 0o644); err != nil {
		return written{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(layoutFile), 0o644); err != nil {
		return written{}, err
	}
	return written{Manifest: man, Layer: layer, LayerRawSize: rawSize}, nil
}

// blobStore writes content-addressed blobs into dir (blobs/sha256).
type blobStore struct{ dir string }

func (s blobStore) putJSON(mediaType string, v any) (descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, fmt.Errorf("%s: %w", mediaType, err)
	}
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(s.dir, hexSum), data, 0o644); err != nil {
		return descriptor{}, err
	}
	return descriptor{MediaType: mediaType, Digest: "sha256:" + hexSum, Size: int64(len(data))}, nil
}

// putLayer writes files as a gzip-compressed tar layer and returns its
// descriptor, its diff_id (the digest of the uncompressed tar) and the
// uncompressed size.
func (s blobStore) putLayer(files []entry, mtime time.Time) (descriptor, string, int64, error) {
	tmp, err := os.CreateTemp(s.dir, ".layer-*")
	if err != nil {
		return descriptor{}, "", 0, err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	defer tmp.Close()
	compressed := newDigester(tmp)
	buf := bufio.NewWriterSize(compressed, 1<<20)
	// The zero gzip.Header: no file name, no comment, MTIME 0, OS 255
	// (unknown), so the stream depends only on the tar bytes and the
	// compress/flate of the Go toolchain.
	zw, err := gzip.NewWriterLevel(buf, gzip.BestCompression)
	if err != nil {
		return descriptor{}, "", 0, err
	}
	uncompressed := newDigester(zw)
	if err := writeTar(uncompressed, files, mtime); err != nil {
		return descriptor{}, "", 0, err
	}
	if err := zw.Close(); err != nil {
		return descriptor{}, "", 0, err
	}
	if err := buf.Flush(); err != nil {
		return descriptor{}, "", 0, err
	}
	if err := tmp.Close(); err != nil {
		return descriptor{}, "", 0, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return descriptor{}, "", 0, err
	}
	digest := compressed.digest()
	if err := os.Rename(tmp.Name(), filepath.Join(s.dir, digest[len("sha256:"):])); err != nil {
		return descriptor{}, "", 0, err
	}
	return descriptor{MediaType: mediaTypeLayer, Digest: digest, Size: compressed.n}, uncompressed.digest(), uncompressed.n, nil
}

// digester passes writes to w and keeps their SHA-256 and length.
type digester struct {
	w io.Writer
	h hash.Hash
	n int64
}

func newDigester(w io.Writer) *digester { return &digester{w: w, h: sha256.New()} }

func (d *digester) Write(p []byte) (int, error) {
	n, err := d.w.Write(p)
	d.h.Write(p[:n])
	d.n += int64(n)
	return n, err
}

func (d *digester) digest() string { return "sha256:" + hex.EncodeToString(d.h.Sum(nil)) }
