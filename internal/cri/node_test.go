package cri

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/images"
	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/multinet"
	"github.com/sllbrd/sllbrd/internal/harness/node"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// testNode returns the node of make node-up when one is up (it stays up),
// else brings one up and takes it down when the test ends; and the
// reference of the pause image, which is in the node's containerd.
func testNode(t *testing.T, ctx context.Context) (*node.Node, string) {
	t.Helper()
	require.Root(t)
	require.Programs(t, "containerd", "runc", "ctr", "iptables")
	bin := kubetest.RequireNodeAssets(t)
	repo, err := e2e.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// Where make node-up builds them too: unchanged images are reused.
	set, err := images.Build(ctx, images.Options{Dir: filepath.Join(repo, "bin", "node-images"), ModuleDir: repo})
	if err != nil {
		t.Fatal(err)
	}
	pause := node.Image{Archive: set.Pause.Archive, Ref: set.Pause.Ref}
	dirs, err := node.DefaultDirs()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := node.Open(dirs, t); err == nil && n.Check(ctx) == nil {
		t.Logf("using the node that is up in %s (make node-up); it stays up", dirs.State)
		if err := n.ImportImage(ctx, pause); err != nil {
			t.Fatal(err)
		}
		return n, pause.Ref
	}
	plugin := filepath.Join(t.TempDir(), multinet.TypeName)
	if err := multinet.BuildPlugin(ctx, plugin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := node.Down(context.Background(), dirs, t); err != nil {
			t.Errorf("node down: %v", err)
		}
	})
	n, err := node.Up(ctx, node.Options{Dirs: dirs, Bin: bin, Multinet: plugin, Pause: pause, Log: t})
	if err != nil {
		t.Fatal(err)
	}
	return n, pause.Ref
}
