package onnode

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/images"
	"github.com/sllbrd/sllbrd/internal/harness/multinet"
	"github.com/sllbrd/sllbrd/internal/harness/node"
)

// nodeImages are what the test builds for the node.
type nodeImages struct {
	sllbrd, responder, pause node.Image
	multinet                 string
}

// buildImages builds the three images (into bin/node-images, where `make
// node-up` builds them too, so an unchanged image is reused) and the
// multinet plugin.
func buildImages(t *testing.T, ctx context.Context, repo, dir string) nodeImages {
	t.Helper()
	set, err := images.Build(ctx, images.Options{Dir: filepath.Join(repo, "bin", "node-images"), ModuleDir: repo})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, multinet.TypeName)
	if err := multinet.BuildPlugin(ctx, out); err != nil {
		t.Fatal(err)
	}
	im := func(i images.Image) node.Image { return node.Image{Archive: i.Archive, Ref: i.Ref} }
	return nodeImages{sllbrd: im(set.Sllbrd), responder: im(set.Responder), pause: im(set.Pause), multinet: out}
}
