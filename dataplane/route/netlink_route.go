package route

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// Routes implements Kernel.
func (k *NetlinkKernel) Routes() ([]Route, error) { return tableroute.List(k.rt) }

// ReplaceRoute implements Kernel: one RTM_NEWROUTE with NLM_F_REPLACE
// carrying every next hop, written as RTPROT_STATIC (tableroute.Replace
// says how each family swaps the route without a window).
func (k *NetlinkKernel) ReplaceRoute(r Route) error {
	return tableroute.Replace(k.rt, r, unix.RTPROT_STATIC)
}

// DeleteRoute implements Kernel: the route is selected by its key only, so
// routes written by others in our tables are removed too.
func (k *NetlinkKernel) DeleteRoute(r Route) error { return tableroute.Delete(k.rt, r) }

// DeleteNeighbour implements Kernel.
func (k *NetlinkKernel) DeleteNeighbour(ifIndex uint32, addr netip.Addr) error {
	return tableroute.DeleteNeighbour(k.rt, ifIndex, addr)
}
