package main

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

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
	var want [2]bool
	for _, r := range routers {
		want[family(r.Address)] = true
	}
	have := families(gateways)
	return (!want[0] || have[0]) && (!want[1] || have[1])
}

// families reports which families (index family) gateways hold an address of.
func families(gateways []route.Nexthop) (have [2]bool) {
	for _, g := range gateways {
		have[family(g.Addr)] = true
	}
	return have
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
	have := families(gateways)
	kept := make([]netip.Addr, 0, len(vips))
	for _, v := range vips {
		if have[family(v)] {
			kept = append(kept, v)
		}
	}
	return kept, len(vips) - len(kept)
}

// adoptHold is how long, at most, the return path of a previous run stands
// in for a family whose gateways' sessions are not up yet.
const adoptHold = 10 * time.Second

// adoptedPath keeps the return path a previous run left (after a crash or a
// restart with --on-exit keep) while the sessions of this run come up. The
// targets may still send their replies through this SLLBR (kubelet and the
// controller take seconds to take it out, none while no controller
// leads): an apply with no gateway would replace that route with the
// blackhole and drop them until BFD and BGP are up again, and with
// rp_filter the traffic to the VIPs too. Each family's adopted gateways
// stand in until this run has a gateway of that family (then they are
// released for good: from there on the sessions decide) or adoptHold has
// passed. It is used on the reconcile loop's goroutine only.
type adoptedPath struct {
	hops  [2][]route.Nexthop // per family
	until time.Time
}

func newAdoptedPath(hops []route.Nexthop, now time.Time) *adoptedPath {
	p := &adoptedPath{until: now.Add(adoptHold)}
	for _, h := range hops {
		p.hops[family(h.Addr)] = append(p.hops[family(h.Addr)], h)
	}
	return p
}

// merge returns live, the gateways of this run, with the adopted ones of
// each family live has none of, until the hold ends.
func (p *adoptedPath) merge(live []route.Nexthop, now time.Time) []route.Nexthop {
	have := families(live)
	out := slices.Clip(live) // appending never writes into the caller's array
	for fam := range p.hops {
		if have[fam] || !now.Before(p.until) {
			p.hops[fam] = nil
		}
		out = append(out, p.hops[fam]...)
	}
	return out
}

// adoptReturnPath makes the applies keep the return path a previous run
// left until this run's gateways are up (adoptedPath), and asks the loop
// for a pass when the hold ends. Before the first apply.
func (d *daemon) adoptReturnPath() {
	hops, err := d.prog.AdoptReturnPath()
	if err != nil {
		d.log.Warn("adopting the return path of a previous run", "err", err)
		return
	}
	if len(hops) == 0 {
		return
	}
	now := time.Now()
	adopted := newAdoptedPath(hops, now)
	d.applier.gateways = func() []route.Nexthop { return adopted.merge(d.loop.Gateways(), time.Now()) }
	d.loop.RunBy(adopted.until)
	d.log.Info("kept the return path of a previous run until the gateways' sessions are up", "gateways", len(hops), "hold", adoptHold.String())
}
