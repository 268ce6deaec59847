package bpfpath

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
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
}

// SetNextHops makes hops the program's next hops, replacing the previous
// ones: a decided packet whose endpoint (mark) has a next hop of its
// family is forwarded to it by the program; the others are marked and
// handed to the stack. Each next hop is replaced whole (a packet sees the
// old or the new one); unchanged ones are not rewritten. It fails, with
// nothing written, on two next hops of one mark and family, an invalid
// Via, an Ifindex below 1 or a negative MTU; a kernel error part-way
// leaves what was written so far, and the next call completes it.
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
		want[k] = ingressNextHop{Family: af, Ifindex: uint32(h.Ifindex), Mtu: uint32(h.MTU), Addr: words(via)}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
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
