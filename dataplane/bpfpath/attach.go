package bpfpath

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Attachment is a program attached to one interface: the tc program at
// tcx ingress (Attach), or the XDP program (AttachXDP).
type Attachment struct {
	d       *Datapath
	link    link.Link
	ifname  string
	ifindex int
	mode    string // "tcx", "xdp-driver" or "xdp-generic"
}

// Attach attaches the program at the tcx ingress of the interface named
// ifname in the calling thread's network namespace, after the programs
// already there: they see every packet first; the packets it does not
// redirect (TC_ACT_UNSPEC) go on to the programs attached after it, then
// the stack. The attachment is a link held by this process:
// it ends with Detach, Close or the process (pinning it, so that it
// survives a restart and a new process adopts it, is not done yet). An
// interface that does not exist, or cannot take a tcx program (a kernel
// before 6.6), is a wrapped error that says so.
func (d *Datapath) Attach(ifname string) (*Attachment, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("bpfpath: attaching to interface %q: %w", ifname, err)
	}
	l, err := link.AttachTCX(link.TCXOptions{Interface: ifc.Index, Program: d.objs.SllbrdIngress, Attach: ebpf.AttachTCXIngress})
	if err != nil {
		return nil, attachError(ifname, err)
	}
	a := &Attachment{d: d, link: l, ifname: ifname, ifindex: ifc.Index, mode: "tcx"}
	d.mu.Lock()
	d.links[a] = true
	d.mu.Unlock()
	return a, nil
}

// attachError says why attaching to ifname failed.
func attachError(ifname string, err error) error {
	switch {
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Errorf("bpfpath: attaching to interface %q: the kernel lacks tcx (6.6 or later): %w", ifname, err)
	case errors.Is(err, unix.EPERM) || errors.Is(err, os.ErrPermission):
		return fmt.Errorf("bpfpath: attaching to interface %q needs CAP_NET_ADMIN and CAP_BPF (or root): %w", ifname, err)
	}
	return fmt.Errorf("bpfpath: attaching at tcx ingress of interface %q: %w", ifname, err)
}

// Interface is the name of the interface the program is attached to.
func (a *Attachment) Interface() string { return a.ifname }

// Ifindex is the index the interface had when the program was attached:
// an interface deleted and created again has another, and the kernel
// dropped the attachment with the old one.
func (a *Attachment) Ifindex() int { return a.ifindex }

// Mode says which program is attached and how: "tcx" (Attach), or
// "xdp-driver" or "xdp-generic" (AttachXDP).
func (a *Attachment) Mode() string { return a.mode }

// Detach detaches the program from the interface: its packets go to the
// stack (and the programs after it) again. Detaching twice is no error.
func (a *Attachment) Detach() error {
	a.d.mu.Lock()
	attached := a.d.links[a]
	delete(a.d.links, a)
	a.d.mu.Unlock()
	if !attached {
		return nil
	}
	if err := a.link.Close(); err != nil {
		return fmt.Errorf("bpfpath: detaching from interface %q: %w", a.ifname, err)
	}
	if a.mode != "tcx" {
		return a.d.forgetXDPInterface(a.ifindex)
	}
	return nil
}
