package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// options is the command line.
type options struct {
	stamp
	program
	Name    string // image repository: the reference's and the push line's name
	Arch    string // GOARCH of the image
	Layout  string // OCI layout directory to write
	Archive string // OCI archive to write; empty: none
	Reuse   bool   // keep outputs made from the same inputs (reuse.go)
	JSON    bool   // print the result as one JSON object
}

// result is what a build produced.
type result struct {
	stamp
	written
	Reused  bool
	Rebuilt string // with -reuse, why the outputs were written again
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
	if err == nil {
		err = printResult(os.Stdout, opts, res)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func parseOptions(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.Version, "version", "", "version stamped into the binary and the labels (default: git describe --tags --always --dirty --abbrev=12)")
	fs.StringVar(&o.Revision, "revision", "", "commit id for the revision label (default: git rev-parse HEAD)")
	fs.StringVar(&o.Arch, "arch", runtime.GOARCH, "GOARCH of the image")
	fs.StringVar(&o.Main, "main", mainPackage, "main package of this module to pack, relative to its root; the image runs /<its last element>")
	fs.StringVar(&o.Name, "name", "", "image repository of the reference and the push line (default "+imageRepository+" for "+mainPackage+"; required for any other -main)")
	fs.StringVar(&o.Layout, "layout", "", "OCI image layout directory to write (replaced; default bin/<binary>-image)")
	fs.StringVar(&o.Archive, "archive", "", "OCI archive to write (replaced; default bin/<binary>-image.tar); -archive= writes none")
	fs.BoolVar(&o.Reuse, "reuse", false, "keep the layout and archive when they were made from the same inputs (recorded in <layout>.inputs.json)")
	fs.BoolVar(&o.JSON, "json", false, "print the result as one JSON object")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var err error
	if o.program, err = newProgram(o.Main); err != nil {
		return o, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["layout"] {
		o.Layout = filepath.Join("bin", o.Binary+"-image")
	}
	if !set["archive"] {
		o.Archive = filepath.Join("bin", o.Binary+"-image.tar")
	}
	if !set["name"] && o.sllbrd() {
		o.Name = imageRepository
	}
	if o.Name == "" {
		return o, fmt.Errorf("-name is required with -main %s (the image's repository, e.g. localhost/sllbrd-%s)", o.Main, o.Binary)
	}
	if err := validateName(o.Name); err != nil {
		return o, err
	}
	if o.Layout == "" {
		return o, errors.New("-layout is required")
	}
	return o, nil
}

// build compiles the program and writes the image as opts says.
func build(ctx context.Context, opts options) (result, error) {
	if err := validateArch(opts.Arch); err != nil {
		return result{}, err
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return result{}, err
	}
	if err := checkMain(ctx, root, opts.program); err != nil {
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
	binary, err := buildBinary(ctx, root, work, opts.Arch, s.Version, opts.program)
	if err != nil {
		return result{}, err
	}
	spec := imageSpec{Binary: opts.Binary, Arch: opts.Arch, Created: s.Created, Labels: labels(s, opts.program), Tag: s.tag()}
	res := result{stamp: s}
	if !opts.Reuse {
		res.written, err = writeOutputs(opts.Layout, opts.Archive, binary, spec)
	} else {
		res.written, res.Rebuilt, err = writeOrReuse(opts.Layout, opts.Archive, binary, spec)
		res.Reused = err == nil && res.Rebuilt == ""
	}
	return res, err
}

// writeOutputs writes the image of binary as the layout and, unless
// archive is empty, the archive.
func writeOutputs(layout, archive, binary string, spec imageSpec) (written, error) {
	w, err := writeImage(layout, binary, spec)
	if err != nil {
		return written{}, err
	}
	if archive != "" {
		if err := writeArchive(layout, archive, spec.Created); err != nil {
			return written{}, err
		}
	}
	return w, nil
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
	w, err := writeLayout(tmp, spec, rootfs(spec.Binary, binary))
	if err != nil {
		return written{}, fmt.Errorf("write layout: %w", err)
	}
	if err := replaceLayout(tmp, dir); err != nil {
		return written{}, fmt.Errorf("write layout %s: %w", dir, err)
	}
	return w, nil
}

// labels are the OCI pre-defined annotation keys the image carries
// (https://github.com/opencontainers/image-spec/blob/main/annotations.md);
// only sllbrd's image has a description.
func labels(s stamp, p program) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":    p.Binary,
		"org.opencontainers.image.source":   sourceURL,
		"org.opencontainers.image.licenses": license,
		"org.opencontainers.image.version":  s.Version,
		"org.opencontainers.image.revision": s.Revision,
		"org.opencontainers.image.created":  s.Created.UTC().Format(time.RFC3339),
	}
	if p.sllbrd() {
		l["org.opencontainers.image.description"] = description
	}
	return l
}

// report is the -json output: one object on one line.
type report struct {
	Name     string `json:"name"`   // the image repository
	Ref      string `json:"ref"`    // name:tag, the tag being ref.name in index.json
	Digest   string `json:"digest"` // the manifest's
	Layout   string `json:"layout"`
	Archive  string `json:"archive,omitempty"`
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Created  string `json:"created"` // RFC 3339, UTC
	Reused   bool   `json:"reused"`
	Rebuilt  string `json:"rebuilt,omitempty"` // with -reuse, why it was written again
}

func printResult(w io.Writer, opts options, r result) error {
	if opts.JSON {
		return json.NewEncoder(w).Encode(report{
			Name: opts.Name, Ref: opts.Name + ":" + r.tag(), Digest: r.Manifest.Digest,
			Layout: opts.Layout, Archive: opts.Archive,
			Version: r.Version, Revision: r.Revision, Created: r.Created.UTC().Format(time.RFC3339),
			Reused: r.Reused, Rebuilt: r.Rebuilt,
		})
	}
	fmt.Fprintf(w, "image   %s (OCI layout)\n", opts.Layout)
	if opts.Archive != "" {
		fmt.Fprintf(w, "archive %s (OCI archive)\n", opts.Archive)
	}
	fmt.Fprintf(w, "digest  %s\n", r.Manifest.Digest)
	fmt.Fprintf(w, "version %s (revision %s, created %s)\n", r.Version, r.Revision, r.Created.Format(time.RFC3339))
	fmt.Fprintf(w, "layer   %d bytes compressed, %d uncompressed\n", r.Layer.Size, r.LayerRawSize)
	if r.Reused {
		fmt.Fprintln(w, "reused  (made from the same inputs)")
	} else if r.Rebuilt != "" {
		fmt.Fprintf(w, "rebuilt (%s)\n", r.Rebuilt)
	}
	src := "oci:" + opts.Layout
	if opts.Archive != "" {
		src = "oci-archive:" + opts.Archive
	}
	_, err := fmt.Fprintf(w, "push    skopeo copy %s docker://%s:%s\n", src, opts.Name, r.tag())
	return err
}
