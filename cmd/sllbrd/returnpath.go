package main

import (
	"net/netip"
	"sync/atomic"

	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/model"
)

// returnPathLatch holds readiness back until an apply has programmed a
// return path with a gateway of every family the GatewayRouters have. Until
// then the return table holds only its blackhole: a pod Ready earlier
// becomes a next hop of the targets (through the controller) and drops the
// replies they send it, for as long as BFD and BGP take to come up after
// every start, restart and scale-up. The latch never opens again: once the
// SLLBR has routed replies, losing every gateway later (a gateway's
// restart) withdraws its VIPs through BGP and BFD, and unreadying every
// SLLBR at once would only churn the next hops of every target.
type returnPathLatch struct{ done atomic.Bool }

// observe is called after each apply that programmed the dataplane with
// gateways as the return path's next hops.
func (l *returnPathLatch) observe(routers []model.Router, gateways []route.Nexthop) {
	if l.done.Load() {
		return
	}
	if covers(gateways, routers) {
		l.done.Store(true)
	}
}

// covers reports whether gateways hold an address of each family routers
// have (none: nothing to wait for).
func covers(gateways []route.Nexthop, routers []model.Router) bool {
	var want, have [2]bool
	for _, r := range routers {
		want[family(r.Address)] = true
	}
	for _, g := range gateways {
		have[family(g.Addr)] = true
	}
	return (!want[0] || have[0]) && (!want[1] || have[1])
}

func family(a netip.Addr) int {
	if a.Is4() || a.Is4In6() {
		return 0
	}
	return 1
}

// ready reports whether the latch is open, with the reason when not.
func (l *returnPathLatch) ready() (bool, string) {
	if l.done.Load() {
		return true, ""
	}
	return false, "no gateway of every GatewayRouter family in the return path yet (BFD and BGP coming up): replies would be dropped"
}

// withReturnPath returns the VIPs of vips whose family has a gateway in
// gateways, the return path an apply just programmed, and how many it left
// out. A VIP is announced only then: the gateway adds an SLLBR to its ECMP
// route as soon as the announcement arrives, and until the return table
// holds a gateway of the VIP's family the kernel drops that traffic
// (rp_filter's lookup from the VIP finds the blackhole) and the replies. A
// BGP gateway's default route and this SLLBR's VIPs cross on the wire when
// a session comes up, so announcing earlier loses the packets of the
// milliseconds the apply takes.
func withReturnPath(vips []netip.Addr, gateways []route.Nexthop) ([]netip.Addr, int) {
	var have [2]bool
	for _, g := range gateways {
		have[family(g.Addr)] = true
	}
	kept := make([]netip.Addr, 0, len(vips))
	for _, v := range vips {
		if have[family(v)] {
			kept = append(kept, v)
		}
	}
	return kept, len(vips) - len(kept)
}
