package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// What the image says about itself.
const (
	// imageRepository is where releases are pushed and what deploy/ names.
	imageRepository = "ghcr.io/sllbrd/sllbrd"
	sourceURL       = "https://github.com/sllbrd/sllbrd"
	license         = "Apache-2.0" // SPDX identifier of LICENSE
	title           = "sllbrd"
	description     = "Stateless, NAT-less L3/L4 load balancer and router for Kubernetes secondary networks (nfqueue, Maglev, BGP, BFD)"
)

// options is the command line.
type options struct {
	stamp
	Arch    string // GOARCH of the image
	Layout  string // OCI layout directory to write
	Archive string // OCI archive to write; empty: none
}

// result is what a build produced.
type result struct {
	stamp
	written
}

func main() {
	opts, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(2)
	}
	res, err := build(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	printResult(os.Stdout, opts, res)
}

func parseOptions(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.Version, "version", "", "version stamped into the binary and the labels (default: git describe --tags --always --dirty --abbrev=12)")
	fs.StringVar(&o.Revision, "revision", "", "commit id for the revision label (default: git rev-parse HEAD)")
	fs.StringVar(&o.Arch, "arch", runtime.GOARCH, "GOARCH of the image")
	fs.StringVar(&o.Layout, "layout", "bin/sllbrd-image", "OCI image layout directory to write (replaced)")
	fs.StringVar(&o.Archive, "archive", "bin/sllbrd-image.tar", "OCI archive to write (replaced); empty: none")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.Layout == "" {
		return o, errors.New("-layout is required")
	}
	return o, nil
}

// build compiles sllbrd and writes the image as opts says.
func build(ctx context.Context, opts options) (result, error) {
	if err := validateArch(opts.Arch); err != nil {
		return result{}, err
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return result{}, err
	}
	s, err := resolveStamp(ctx, root, opts.stamp)
	if err != nil {
		return result{}, err
	}
	work, err := os.MkdirTemp("", "sllbrd-image-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(work)
	binary, err := buildBinary(ctx, root, work, opts.Arch, s.Version)
	if err != nil {
		return result{}, err
	}
	res := result{stamp: s}
	if res.written, err = writeImage(opts.Layout, binary, imageSpec{
		Arch: opts.Arch, Created: s.Created, Labels: labels(s), Tag: s.tag(),
	}); err != nil {
		return result{}, err
	}
	if opts.Archive != "" {
		if err := writeArchive(opts.Layout, opts.Archive, s.Created); err != nil {
			return result{}, err
		}
	}
	return res, nil
}

// writeImage writes the layout of the image of binary into dir through a
// temporary directory beside it.
func writeImage(dir, binary string, spec imageSpec) (written, error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return written{}, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+"-")
	if err != nil {
		return written{}, err
	}
	defer os.RemoveAll(tmp) // after the rename, a no-op
	if err := os.Chmod(tmp, 0o755); err != nil {
		return written{}, err
	}
	w, err := writeLayout(tmp, spec, rootfs(binary))
	if err != nil {
		return written{}, fmt.Errorf("write layout: %w", err)
	}
	if err := replaceLayout(tmp, dir); err != nil {
		return written{}, fmt.Errorf("write layout %s: %w", dir, err)
	}
	return w, nil
}

// labels are the OCI pre-defined annotation keys the image carries
// (https://github.com/opencontainers/image-spec/blob/main/annotations.md).
func labels(s stamp) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       title,
		"org.opencontainers.image.description": description,
		"org.opencontainers.image.source":      sourceURL,
		"org.opencontainers.image.licenses":    license,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
	}
}

func printResult(w io.Writer, opts options, r result) {
	fmt.Fprintf(w, "image   %s (OCI layout)\n", opts.Layout)
	if opts.Archive != "" {
		fmt.Fprintf(w, "archive %s (OCI archive)\n", opts.Archive)
	}
	fmt.Fprintf(w, "digest  %s\n", r.Manifest.Digest)
	fmt.Fprintf(w, "version %s (revision %s, created %s)\n", r.Version, r.Revision, r.Created.Format(time.RFC3339))
	fmt.Fprintf(w, "layer   %d bytes compressed, %d uncompressed\n", r.Layer.Size, r.LayerRawSize)
	src := "oci:" + opts.Layout
	if opts.Archive != "" {
		src = "oci-archive:" + opts.Archive
	}
	fmt.Fprintf(w, "push    skopeo copy %s docker://%s:%s\n", src, imageRepository, r.tag())
}
