package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// Image is an OCI archive to import into the node's containerd under Ref.
type Image struct {
	Archive string // OCI archive (hack/image)
	Ref     string // name:tag the pods use
}

// Options are what Up needs from its caller.
type Options struct {
	Dirs Dirs
	// Bin holds etcd and the Kubernetes binaries (hack/kube-assets.sh).
	Bin string
	// Multinet is the multinet CNI plugin binary (static).
	Multinet string
	// Pause is the sandbox image; Images are imported as well.
	Pause  Image
	Images []Image
	// RefuseUnsafeSysctls starts the kubelet without allowing sllbrd's
	// unsafe sysctls (SetUnsafeSysctls changes it later).
	RefuseUnsafeSysctls bool
	Log                 Logger
}

func (o Options) validate() error {
	var errs []error
	if err := o.Dirs.validate(); err != nil {
		errs = append(errs, err)
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"} {
		if !executable(filepath.Join(o.Bin, b)) {
			errs = append(errs, fmt.Errorf("%s is missing in %q (hack/kube-assets.sh builds it)", b, o.Bin))
		}
	}
	for _, p := range []string{containerdPath, "/usr/bin/runc", "/usr/bin/containerd-shim-runc-v2", "/usr/bin/ctr"} {
		if !executable(p) {
			errs = append(errs, fmt.Errorf("%s is missing (make deps installs containerd and runc)", p))
		}
	}
	if !executable(o.Multinet) {
		errs = append(errs, fmt.Errorf("multinet %q is not an executable", o.Multinet))
	}
	for _, im := range append([]Image{o.Pause}, o.Images...) {
		if _, err := os.Stat(im.Archive); err != nil || im.Ref == "" {
			errs = append(errs, fmt.Errorf("image %q (%s): want an archive and a reference", im.Ref, im.Archive))
		}
	}
	return errors.Join(errs...)
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Timeouts of Up's steps on a loaded 2-core machine.
const (
	startTimeout = 90 * time.Second
	readyTimeout = 3 * time.Minute
)

// Up brings up the node: whatever a previous node left is taken down first
// (Down), then the bridges, etcd, kube-apiserver, the NetworkAttachment-
// Definition CRD with the node's NADs, the controller manager and the
// scheduler, containerd with the images, the kubelet and kube-proxy. It
// returns once the node is Ready and the default namespace can run pods. On
// error the node is left as it is for its logs (Dirs.State/logs); Down, or
// the next Up, removes it.
func Up(ctx context.Context, o Options) (*Node, error) {
	if o.Log == nil {
		o.Log = discard{}
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if err := Down(ctx, o.Dirs, o.Log); err != nil {
		return nil, fmt.Errorf("node: taking down the previous node: %w", err)
	}
	n := &Node{dirs: o.Dirs, log: o.Log, st: state{Bin: o.Bin, PauseImage: o.Pause.Ref}}
	if !o.RefuseUnsafeSysctls {
		n.st.AllowedUnsafeSysctls = slices.Clone(SLLBRSysctls)
	}
	start := time.Now()
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"files", func(context.Context) error { return n.writeFiles(o.Multinet) }},
		{"bridges", addBridges},
		{"etcd", n.startEtcd},
		{"kube-apiserver", n.startAPIServer},
		{"bootstrap objects", n.bootstrap},
		{"controller manager and scheduler", n.startControllers},
		{"containerd", func(ctx context.Context) error { return n.startContainerd(ctx, append([]Image{o.Pause}, o.Images...)) }},
		{"kubelet", n.startKubelet},
		{"kube-proxy", n.startKubeProxy},
		{"the default namespace", n.waitDefaultNamespace},
	}
	for _, s := range steps {
		t0 := time.Now()
		if err := s.do(ctx); err != nil {
			return n, fmt.Errorf("node: %s: %w (logs in %s)", s.what, err, filepath.Dir(n.dirs.log("x")))
		}
		o.Log.Logf("node: %s up in %v", s.what, time.Since(t0).Round(time.Millisecond))
	}
	o.Log.Logf("node: %s Ready in %v", Name, time.Since(start).Round(time.Millisecond))
	return n, nil
}

// writeFiles writes the state, keys, configurations and CNI directories.
func (n *Node) writeFiles(multinet string) error {
	for _, dir := range []string{n.dirs.State, n.dirs.Run, n.dirs.conf(""), filepath.Join(n.dirs.State, "logs")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}
	if err := makeShared(n.dirs.Run); err != nil {
		return err
	}
	if err := n.saveState(); err != nil {
		return err
	}
	if err := writePKI(n.dirs); err != nil {
		return err
	}
	if err := n.writeConfigs(); err != nil {
		return err
	}
	if err := makeCgroupParent(); err != nil {
		return err
	}
	return n.installCNI(multinet)
}

// writeConfigs writes the configuration files of containerd, the kubelet
// and kube-proxy from the state.
func (n *Node) writeConfigs() error {
	if err := writeFile(n.dirs.conf("containerd.toml"), []byte(n.containerdConfig())); err != nil {
		return err
	}
	for name, cfg := range map[string]map[string]any{"kubelet.yaml": n.kubeletConfig(), "kube-proxy.yaml": n.kubeProxyConfig()} {
		b, err := yaml.Marshal(cfg)
		if err != nil {
			return fmt.Errorf("node: %s: %w", name, err)
		}
		if err := writeFile(n.dirs.conf(name), b); err != nil {
			return err
		}
	}
	return nil
}

// makeShared bind-mounts dir onto itself and makes it a shared mount: the
// pods' network namespaces are mounted below it, and a container may take
// them with HostToContainer propagation only from a shared (or slave)
// mount, which this host's root is not. Down unmounts it.
func makeShared(dir string) error {
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("node: bind-mount %s onto itself: %w", dir, err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("node: make %s a shared mount: %w", dir, err)
	}
	return nil
}
