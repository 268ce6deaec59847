package targetnode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/cri"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// NetNS finds the network namespace of a pod of the node: the path of a
// file that names it (internal/cri's Client, which asks the container
// runtime). Errors wrap cri.ErrNoSandbox when the pod has no ready
// sandbox, cri.ErrHostNetwork when it runs in the node's namespace.
type NetNS interface {
	PodNetNS(ctx context.Context, podUID string) (string, error)
}

// nsID identifies a namespace (the device and inode of its nsfs file).
type nsID struct{ dev, ino uint64 }

// ownNetNS is the daemon's own network namespace, which it never
// configures (a runtime answering its path would be broken).
func ownNetNS() (nsID, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &st); err != nil {
		return nsID{}, fmt.Errorf("the daemon's own network namespace: %w", err)
	}
	return nsID{uint64(st.Dev), st.Ino}, nil
}

// podNamespace is the targetnet.Configurer of one pod: each Apply finds
// the pod's namespace anew (a sandbox can be re-created with a new one),
// opens it, applies over netlink sockets created in it, and closes the
// sockets and the file, since either keeps the namespace alive, and with
// it the interfaces and addresses of a pod whose sandbox is gone.
type podNamespace struct {
	ctx   context.Context // the pod's agent's: ends when it stops
	d     *Daemon
	uid   string
	found atomic.Int32 // what the last apply found (observe): nsOpened, nsNone or nsNodes
	bfd   *podBFD      // the pod's BFD sessions; nil in clean-up

	mu      sync.Mutex
	current nsID // the namespace the last apply opened (zero: none)
}

func (p *podNamespace) Apply(want targetnet.Desired) (targetnet.Result, error) {
	release, err := p.d.limits.apply(p.ctx)
	if err != nil {
		return targetnet.Result{}, err
	}
	defer release()
	f, id, err := p.open()
	p.observe(err)
	if err != nil {
		return targetnet.Result{}, err
	}
	p.mu.Lock()
	p.current = id
	p.mu.Unlock()
	defer f.Close()
	k, err := targetnet.DialNetlinkKernel(int(f.Fd()))
	if err != nil {
		return targetnet.Result{}, fmt.Errorf("network namespace %s: %w", f.Name(), err)
	}
	defer k.Close()
	return targetnet.New(k).Apply(want)
}

// currentNS returns the namespace the last apply opened; false when the
// last apply found none (or none has run).
func (p *podNamespace) currentNS() (nsID, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current, p.current != nsID{}
}

// open resolves and opens the pod's network namespace, and says which it
// is. A pod without one (no ready sandbox, or its file gone since the
// runtime answered) is targetpod.ErrNoNamespace: not a failure.
func (p *podNamespace) open() (*os.File, nsID, error) {
	path, err := p.d.netns.PodNetNS(p.ctx, p.uid)
	switch {
	case errors.Is(err, cri.ErrNoSandbox):
		return nil, nsID{}, fmt.Errorf("%w: %w", targetpod.ErrNoNamespace, err)
	case errors.Is(err, cri.ErrHostNetwork):
		return nil, nsID{}, fmt.Errorf("not configured, the runtime runs the pod in the node's network namespace: %w", err)
	case err != nil:
		return nil, nsID{}, fmt.Errorf("find the pod's network namespace: %w", err)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nsID{}, fmt.Errorf("%w: %w", targetpod.ErrNoNamespace, err)
	}
	if err != nil {
		return nil, nsID{}, fmt.Errorf("open the pod's network namespace: %w", err)
	}
	id, err := p.d.checkNetNS(f)
	if err != nil {
		f.Close()
		return nil, nsID{}, err
	}
	return f, id, nil
}

// checkNetNS refuses a file that is not a network namespace, or is the
// daemon's own; it returns the namespace's identity.
func (d *Daemon) checkNetNS(f *os.File) (nsID, error) {
	fd := int(f.Fd())
	t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
	if err != nil {
		return nsID{}, fmt.Errorf("%s is not a namespace: %w", f.Name(), err)
	}
	if t != unix.CLONE_NEWNET {
		return nsID{}, fmt.Errorf("%s is not a network namespace (type %#x)", f.Name(), t)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nsID{}, fmt.Errorf("%s: %w", f.Name(), err)
	}
	id := nsID{uint64(st.Dev), st.Ino}
	if id == d.own {
		return nsID{}, fmt.Errorf("%s is the node daemon's own network namespace: not configured", f.Name())
	}
	return id, nil
}
