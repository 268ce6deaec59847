package bpfpath

import (
	"errors"
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// XDPMode is how AttachXDP attaches the XDP program.
type XDPMode int

const (
	// XDPAuto: in driver mode when the interface's driver has it, else
	// generic; generic on a veth. A native XDP program on a veth gets a
	// local sender's frames (another namespace's socket) with the
	// transport checksum unfinished (the skb's CHECKSUM_PARTIAL, which
	// the bytes alone do not carry), so the frames it redirects arrive
	// with bad checksums and are dropped (docs/bpf.md, XDP); in generic
	// mode the skb goes along and keeps it.
	XDPAuto XDPMode = iota
	// XDPDriver: in the driver (native XDP), before the kernel makes an
	// skb: the fast mode. It redirects only to interfaces that take XDP
	// frames (SetNextHops asks the kernel which).
	XDPDriver
	// XDPGeneric: in the stack's receive path, after the skb is made
	// (generic or skb mode): for any driver, to any interface, but with
	// the skb's cost.
	XDPGeneric
)

// xdpIfaceGeneric is bpf/xdp.h's XDP_IFACE_GENERIC.
const xdpIfaceGeneric = 1

// AttachXDP attaches the XDP program to the interface named ifname in the
// calling thread's network namespace, in mode; the Attachment's Mode says
// which mode it got ("xdp-driver" or "xdp-generic"). The XDP program
// decides every frame as the tc program does and forwards itself a
// decided packet addressed to the interface's MAC whose endpoint's next
// hop has MACs (NextHop.MAC, SrcMAC) and, in driver mode, an interface
// that takes XDP frames; that is not from a martian source, has TTL or
// hop limit above 1 and fits the MTU: TTL or hop limit decremented, the
// Ethernet header rewritten, counted (ActionXDPRedirect, and its route's
// and endpoint's counters), and sent out of the next hop's interface
// (bpf_redirect), before the tc program and the stack see it. Everything
// else goes on (XDP_PASS) unchanged and uncounted to the tc program, which
// must be attached to the same interface too (Attach) to act on it: a
// packet is counted once, by the program that acted on it.
//
// The interface must be Ethernet. Its MAC is read now: a frame to a MAC
// it takes later goes to the tc program. The attachment is a link held by
// this process, as Attach's; Detach and Close end it. One XDP attachment
// per interface.
func (d *Datapath) AttachXDP(ifname string, mode XDPMode) (*Attachment, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("bpfpath: attaching XDP to interface %q: %w", ifname, err)
	}
	if len(ifc.HardwareAddr) != 6 {
		return nil, fmt.Errorf("bpfpath: attaching XDP to interface %q: not an Ethernet interface (link-layer address %q)", ifname, ifc.HardwareAddr)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for a := range d.links {
		if a.ifindex == ifc.Index && a.mode != "tcx" {
			return nil, fmt.Errorf("bpfpath: attaching XDP to interface %q: attached already (%s)", ifname, a.mode)
		}
	}
	var l link.Link
	var errs []error
	veth := mode == XDPAuto && isVeth(ifname)
	for _, m := range []XDPMode{XDPDriver, XDPGeneric} {
		if (mode != XDPAuto && mode != m) || (veth && m == XDPDriver) {
			continue
		}
		// The interface's entry goes first: the program passes every
		// frame of an interface it has none of.
		iface := ingressXdpIface{}
		copy(iface.Mac[:], ifc.HardwareAddr)
		flags := link.XDPDriverMode
		if m == XDPGeneric {
			iface.Flags, flags = xdpIfaceGeneric, link.XDPGenericMode
		}
		if err := d.objs.XdpIfaces.Put(uint32(ifc.Index), iface); err != nil {
			return nil, fmt.Errorf("bpfpath: attaching XDP to interface %q: %w", ifname, err)
		}
		l, err = link.AttachXDP(link.XDPOptions{Program: d.objs.SllbrdXdp, Interface: ifc.Index, Flags: flags})
		if err == nil {
			a := &Attachment{d: d, link: l, ifname: ifname, ifindex: ifc.Index, mode: map[XDPMode]string{XDPDriver: "xdp-driver", XDPGeneric: "xdp-generic"}[m]}
			d.links[a] = true
			// The interface may take redirected frames now (a driver
			// that gets its XDP transmit queues with a program).
			return a, d.writeNextHops()
		}
		errs = append(errs, fmt.Errorf("%v: %w", map[XDPMode]string{XDPDriver: "driver mode", XDPGeneric: "generic mode"}[m], err))
	}
	if err := d.objs.XdpIfaces.Delete(uint32(ifc.Index)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("bpfpath: attaching XDP to interface %q: no mode %d", ifname, mode)
	}
	return nil, fmt.Errorf("bpfpath: attaching XDP to interface %q: %w", ifname, errors.Join(errs...))
}

// forgetXDPInterface deletes a detached XDP interface's entry and asks
// again which interfaces take XDP frames.
func (d *Datapath) forgetXDPInterface(ifindex int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.objs.XdpIfaces.Delete(uint32(ifindex)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("bpfpath: forgetting XDP interface %d: %w", ifindex, err)
	}
	return d.writeNextHops()
}

// isVeth reports whether the interface named ifname is a veth (its
// driver's name, by ethtool), in the calling thread's network namespace.
func isVeth(ifname string) bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolDrvinfo(fd, ifname)
	return err == nil && unix.ByteSliceToString(info.Driver[:]) == "veth"
}
