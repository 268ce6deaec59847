package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/images"
	"github.com/sllbrd/sllbrd/internal/harness/multinet"
	"github.com/sllbrd/sllbrd/internal/harness/node"
)

type stderrLog struct{}

func (stderrLog) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: node up|down|status [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, os.Args[2:])
	case "down":
		err = down(ctx)
	case "status":
		err = status(ctx)
	default:
		err = fmt.Errorf("unknown command %q: want up, down or status", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
}

func up(ctx context.Context, args []string) error {
	dirs, err := node.DefaultDirs()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	o := node.Options{Dirs: dirs, Log: stderrLog{}}
	fs.StringVar(&o.Bin, "bin", "", "directory of etcd and the Kubernetes binaries (hack/kube-assets.sh prints it)")
	fs.BoolVar(&o.RefuseUnsafeSysctls, "refuse-unsafe-sysctls", false, "start the kubelet without allowing sllbrd's unsafe sysctls")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	root, err := e2e.ModuleRoot()
	if err != nil {
		return err
	}
	// The images and multinet go where the node test builds them, so that
	// either reuses what the other built.
	dir := filepath.Join(root, "bin", "node-images")
	o.Log.Logf("building the images (sllbrd as make image builds it, pause, the responder) into %s", dir)
	set, err := images.Build(ctx, images.Options{Dir: dir, ModuleDir: root})
	if err != nil {
		return err
	}
	o.Multinet = filepath.Join(dir, multinet.TypeName)
	if err := multinet.BuildPlugin(ctx, o.Multinet); err != nil {
		return err
	}
	o.Pause = node.Image{Archive: set.Pause.Archive, Ref: set.Pause.Ref}
	for _, im := range []images.Image{set.Sllbrd, set.Responder} {
		o.Images = append(o.Images, node.Image{Archive: im.Archive, Ref: im.Ref})
	}
	n, err := node.Up(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("KUBECONFIG=%s\n", n.Kubeconfig())
	fmt.Printf("kubectl: %s\n", n.Kubectl())
	for _, nw := range node.Networks() {
		nad := "the pods' default network"
		if nw.NAD != "" {
			nad = "NetworkAttachmentDefinition " + node.Namespace + "/" + nw.NAD
		}
		fmt.Printf("network: bridge %-11s %-40s %v\n", nw.Bridge, nad, nw.Subnets)
	}
	for _, im := range append([]images.Image{set.Pause}, set.Sllbrd, set.Responder) {
		fmt.Printf("image:   %s\n", im.Ref)
	}
	return nil
}

func down(ctx context.Context) error {
	dirs, err := node.DefaultDirs()
	if err != nil {
		return err
	}
	return node.Down(ctx, dirs, stderrLog{})
}

func status(ctx context.Context) error {
	dirs, err := node.DefaultDirs()
	if err != nil {
		return err
	}
	n, err := node.Open(dirs, stderrLog{})
	if err != nil {
		return err
	}
	return n.Check(ctx)
}
