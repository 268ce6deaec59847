package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestOptionsDefaultToSllbrd: no flags is `make image` as before; another
// -main takes its binary's name for the outputs and needs -name.
func TestOptionsDefaultToSllbrd(t *testing.T) {
	for _, tc := range []struct {
		args                   []string
		binary, name           string
		layout, archive, entry string
	}{
		{nil, "sllbrd", "ghcr.io/sllbrd/sllbrd", "bin/sllbrd-image", "bin/sllbrd-image.tar", "./cmd/sllbrd"},
		{[]string{"-main", "./internal/harness/node/cmd/pause", "-name", "localhost/sllbrd-pause"},
			"pause", "localhost/sllbrd-pause", "bin/pause-image", "bin/pause-image.tar", "./internal/harness/node/cmd/pause"},
		{[]string{"-main", "./cmd/sllbrd", "-name", "registry.example:5000/team/sllbrd", "-layout", "out/l", "-archive="},
			"sllbrd", "registry.example:5000/team/sllbrd", "out/l", "", "./cmd/sllbrd"},
	} {
		o, err := parseOptions(tc.args, io.Discard)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if o.Binary != tc.binary || o.Name != tc.name || o.Layout != tc.layout || o.Archive != tc.archive || o.Main != tc.entry || o.Reuse || o.JSON {
			t.Errorf("%q: %+v, want binary %s name %s layout %s archive %q", tc.args, o, tc.binary, tc.name, tc.layout, tc.archive)
		}
	}
}

// TestOptionsRefuseBadInput: mains that are not a package directory of the
// module, binaries that would replace a directory of the image, names that
// are not repositories, and a foreign -main without a name.
func TestOptionsRefuseBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-main", "./internal/harness/node/cmd/pause"}, // no -name
		{"-main", "cmd/sllbrd"},
		{"-main", "./cmd/../cmd/sllbrd", "-name", "x/y"},
		{"-main", "/abs/cmd", "-name", "x/y"},
		{"-main", "./cmd/sllbrd/", "-name", "x/y"},
		{"-main", "./cmd/x;rm", "-name", "x/y"},
		{"-main", "./x/tmp", "-name", "x/y"},
		{"-main", "./x/etc", "-name", "x/y"},
		{"-name", "localhost/Pause"},
		{"-name", "localhost/sllbrd-pause:v1"},
		{"-name", "localhost//pause"},
		{"-name", "pause-"},
		{"-name", "-pause"},
		{"-name", ""},
		{"-name", strings.Repeat("a", 256)},
		{"-layout", ""},
		{"extra"},
	} {
		if o, err := parseOptions(args, io.Discard); err == nil {
			t.Errorf("%q accepted: %+v", args, o)
		}
	}
}

// TestCheckMainWantsACommand asks the go command about packages of the
// module: only a main package can be packed.
func TestCheckMainWantsACommand(t *testing.T) {
	require.Programs(t, "go")
	ctx := context.Background()
	root, err := moduleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkMain(ctx, root, program{Main: "./internal/harness/lab/responder", Binary: "responder"}); err == nil || !strings.Contains(err.Error(), "not a command") {
		t.Errorf("a library package: %v, want a refusal", err)
	}
	if err := checkMain(ctx, root, program{Main: "./no/such/dir", Binary: "dir"}); err == nil {
		t.Error("a missing package accepted")
	}
	if err := checkMain(ctx, root, pauseProgram); err != nil {
		t.Errorf("the pause command: %v", err)
	}
}

// TestJSONReportNamesTheImage: -json prints one object whose ref is the
// repository and the tag index.json carries.
func TestJSONReportNamesTheImage(t *testing.T) {
	opts, err := parseOptions([]string{"-json", "-main", pauseProgram.Main, "-name", "localhost/sllbrd-pause", "-layout", "/o/l", "-archive", "/o/a.tar"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res := result{stamp: testStamp, written: written{Manifest: descriptor{Digest: "sha256:" + strings.Repeat("0f", 32)}}, Reused: true}
	if err := printResult(&out, opts, res); err != nil {
		t.Fatal(err)
	}
	var got report
	if err := strictJSON([]byte(out.String()), &got); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("%q: %v, want one JSON line", out.String(), err)
	}
	want := report{
		Name: "localhost/sllbrd-pause", Ref: "localhost/sllbrd-pause:" + testStamp.tag(), Digest: res.Manifest.Digest,
		Layout: "/o/l", Archive: "/o/a.tar", Version: testStamp.Version, Revision: testStamp.Revision,
		Created: "2025-03-04T05:06:07Z", Reused: true,
	}
	if got != want {
		t.Errorf("report %+v\nwant   %+v", got, want)
	}
}
