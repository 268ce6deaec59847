package dataplane

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/jsimonetti/rtnetlink/v2"
	"golang.org/x/sys/unix"
)

// NeighbourKey is a neighbour: an address on an interface.
type NeighbourKey struct {
	Ifindex int
	Addr    netip.Addr // unmapped
}

// Neighbours are the link-layer addresses of the usable neighbour entries.
type Neighbours map[NeighbourKey]net.HardwareAddr

// usableNeighbour are the neighbour states whose link-layer address the
// kernel itself sends to (rtnetlink(7), NUD_*): not INCOMPLETE, FAILED or
// NONE. A STALE entry is one no traffic of the stack confirmed lately,
// which is all the XDP program's traffic: the kernel still sends to it.
const usableNeighbour = unix.NUD_REACHABLE | unix.NUD_STALE | unix.NUD_DELAY | unix.NUD_PROBE | unix.NUD_PERMANENT | unix.NUD_NOARP

// NetlinkNeighbours lists the usable neighbour entries of the calling
// thread's network namespace (IPv4 and IPv6).
func NetlinkNeighbours() (Neighbours, error) {
	c, err := rtnetlink.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("dial rtnetlink: %w", err)
	}
	defer c.Close()
	msgs, err := c.Neigh.List()
	if err != nil {
		return nil, fmt.Errorf("list neighbours: %w", err)
	}
	return usableNeighbours(msgs), nil
}

func usableNeighbours(msgs []rtnetlink.NeighMessage) Neighbours {
	out := Neighbours{}
	for _, m := range msgs {
		if m.State&usableNeighbour == 0 || m.Attributes == nil || len(m.Attributes.LLAddress) != 6 {
			continue
		}
		addr, ok := netip.AddrFromSlice(m.Attributes.Address)
		if !ok {
			continue
		}
		out[NeighbourKey{Ifindex: int(m.Index), Addr: addr.Unmap()}] = m.Attributes.LLAddress
	}
	return out
}
