package bpfpath

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// NextHop is where the program sends the packets of one family it decides
// for one endpoint, as package dataplane/route's EndpointRoute routes them
// ("ip rule fwmark MARK lookup TABLE", "default via VIA dev INTERFACE"):
// the packets of Via's family marked Mark go to Via on the interface of
// index Ifindex (in the namespace the program is attached in).
type NextHop struct {
	Mark    uint32
	Via     netip.Addr
	Ifindex int
	// MTU is the interface's MTU (net.Interface.MTU), the largest IP
	// packet the program redirects to it: a longer one (of a GSO skb, a
	// longer segment) goes to the stack, marked, which sends ICMP
	// fragmentation needed or packet too big, or fragments an IPv4
	// packet without DF (ActionTooBig). 0 means not known: nothing fits,
	// so the program redirects none of this next hop's packets and the
	// stack forwards them all (fail-safe, not fast). The caller updates it
	// (SetNextHops again) when the interface's MTU changes; a route's own
	// MTU (ip route ... mtu) is not considered.
	MTU int
	// MAC is Via's link-layer address (the neighbour table's, when its
	// entry is usable) and SrcMAC the interface's (net.Interface's
	// HardwareAddr), both Ethernet (6 bytes) or both nil. The XDP program
	// (AttachXDP), which has no neighbour table, forwards only to a next
	// hop with both: it writes them into the frame. Without them it
	// passes the packets to the tc program, whose bpf_redirect_neigh
	// resolves Via itself. A MAC is used as given: the caller updates it
	// (SetNextHops again) when the neighbour's changes, and sets nil when
	// the entry is not usable (FAILED, INCOMPLETE), so that the kernel
	// resolves it again. (A neighbour that only XDP sends to gets no
	// traffic through the neighbour table and goes STALE; that is no
	// reason to drop its MAC.)
	MAC, SrcMAC net.HardwareAddr
}

// SetNextHops makes hops the program's next hops, replacing the previous
// ones: a decided packet whose endpoint (mark) has a next hop of its
// family is forwarded to it by the program; the others are marked and
// handed to the stack. Each next hop is replaced whole (a packet sees the
// old or the new one); unchanged ones are not rewritten. It fails, with
// nothing written, on two next hops of one mark and family, an invalid
// Via, an Ifindex below 1, a negative MTU, or MACs that are not both
// Ethernet addresses or both nil; a kernel error part-way leaves what was
// written so far, and the next call completes it.
//
// It also asks the kernel (netdev netlink family, 6.3+; in the calling
// thread's network namespace, the interfaces') which interfaces take
// frames an XDP program redirects in driver mode (ndo_xdp_xmit): a
// driver-mode XDP attachment forwards only to those, and passes the rest
// to the tc program (an interface it cannot ask about is not one). A
// driver-mode redirect to an interface that stops taking them (a veth
// whose peer loses its XDP program and GRO) is dropped until the next
// SetNextHops or AttachXDP asks again.
func (d *Datapath) SetNextHops(hops []NextHop) error {
	want := map[ingressEndpointKey]ingressNextHop{}
	for _, h := range hops {
		if !h.Via.IsValid() || h.Ifindex < 1 || h.Ifindex > 1<<31-1 {
			return fmt.Errorf("bpfpath: next hop %+v: want a valid address and an interface index of at least 1", h)
		}
		if h.MTU < 0 || h.MTU > 1<<31-1 {
			return fmt.Errorf("bpfpath: next hop %+v: want an MTU of 0 (not known) or more", h)
		}
		via := h.Via.Unmap()
		fam, af := uint32(6), uint32(unix.AF_INET6)
		if via.Is4() {
			fam, af = 4, unix.AF_INET
		}
		k := ingressEndpointKey{Mark: h.Mark, Family: fam}
		if _, ok := want[k]; ok {
			return fmt.Errorf("bpfpath: two next hops of mark %#x, IPv%d", h.Mark, fam)
		}
		nh := ingressNextHop{Family: af, Ifindex: uint32(h.Ifindex), Mtu: uint32(h.MTU), Addr: words(via)}
		switch {
		case len(h.MAC) == 6 && len(h.SrcMAC) == 6:
			nh.Flags |= nextHopMAC
			copy(nh.Mac[:], h.MAC)
			copy(nh.SrcMac[:], h.SrcMAC)
		case len(h.MAC) != 0 || len(h.SrcMAC) != 0:
			return fmt.Errorf("bpfpath: next hop %+v: want MAC and SrcMAC both Ethernet addresses (6 bytes), or both nil", h)
		}
		want[k] = nh
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hopsWanted = want
	return d.writeNextHops()
}

// The flags of a next hop (bpf/forward.h).
const (
	nextHopMAC       = 1 // NEXT_HOP_MAC
	nextHopXDPTarget = 2 // NEXT_HOP_XDP_TARGET
)

// writeNextHops writes d.hopsWanted, each with the XDP target flag of its
// interface as the kernel reports it now, where they differ from what the
// map holds (d.hops). d.mu is held.
func (d *Datapath) writeNextHops() error {
	want := map[ingressEndpointKey]ingressNextHop{}
	var ifindexes []int
	for _, nh := range d.hopsWanted {
		if nh.Flags&nextHopMAC != 0 && !slices.Contains(ifindexes, int(nh.Ifindex)) {
			ifindexes = append(ifindexes, int(nh.Ifindex))
		}
	}
	// An interface it cannot ask about takes no driver-mode redirect:
	// the error is no reason to fail.
	targets, _ := xdpTargets(ifindexes)
	for k, nh := range d.hopsWanted {
		if nh.Flags&nextHopMAC != 0 && targets[int(nh.Ifindex)] {
			nh.Flags |= nextHopXDPTarget
		}
		want[k] = nh
	}
	for _, k := range slices.SortedFunc(maps.Keys(want), compareEndpointKeys) {
		if old, ok := d.hops[k]; ok && old == want[k] {
			continue
		}
		if err := d.objs.NextHops.Put(k, want[k]); err != nil {
			return fmt.Errorf("bpfpath: next hop of mark %#x, IPv%d: %w", k.Mark, k.Family, err)
		}
		d.hops[k] = want[k]
	}
	for _, k := range slices.SortedFunc(maps.Keys(d.hops), compareEndpointKeys) {
		if _, ok := want[k]; ok {
			continue
		}
		if err := d.objs.NextHops.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("bpfpath: removing the next hop of mark %#x, IPv%d: %w", k.Mark, k.Family, err)
		}
		delete(d.hops, k)
	}
	return nil
}

func compareEndpointKeys(a, b ingressEndpointKey) int {
	return cmp.Or(cmp.Compare(a.Mark, b.Mark), cmp.Compare(a.Family, b.Family))
}
