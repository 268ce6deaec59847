package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"runtime/debug"
	"slices"
	"time"

	"github.com/sllbrd/sllbrd/bgp"
	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/reconcile"
	"github.com/sllbrd/sllbrd/model"
)

// The components of an apply, as named in metrics and logs.
const (
	componentDataplane = "dataplane"
	componentRouters   = "gateway_routers"
	componentAnnounce  = "vip_announcement"
)

// programmer is the dataplane part of an apply (*dataplane.Programmer).
type programmer interface {
	Apply(st *model.State, gateways []route.Nexthop) (dataplane.Applied, error)
}

// routing is the BGP and BFD part of an apply (*uplink.Uplink).
type routing interface {
	Apply(ctx context.Context, routers []model.Router) error
	Announce(ctx context.Context, vips []netip.Addr) error
}

// applier is the reconcile loop's only action: it configures the
// GatewayRouters (BGP peers, BFD sessions), programs the dataplane and
// announces the VIPs that are served. Each part is attempted on every pass, and any
// failure fails the pass, so the loop retries it with backoff and readiness
// reports it. Its fields other than routing are set once; it runs on the
// loop's goroutine only.
type applier struct {
	log       *slog.Logger
	dataplane programmer
	routing   routing // set once routing has started, before the loop runs
	metrics   *metrics.Config
	problems  func(n int) // how many parts the dataplane left out
	// rerunBy asks the loop for another pass by a time: removed endpoints'
	// routes are due for deletion then (nil: never asked).
	rerunBy func(time.Time)
	// gateways returns the return path's next hops as the routing apply
	// left them (the loop's, updated through SetGateways; nil: the pass's).
	gateways func() []route.Nexthop
	// moved counts the Maglev entries a change of the dead set moved (nil:
	// not counted).
	moved func(tableMoves)
	// returnPath opens readiness once a return path is programmed.
	returnPath returnPathLatch

	announced []netip.Addr        // VIPs last announced
	held      int                 // served VIPs last held back for want of a return path
	dead      map[netip.Addr]bool // the dead set of the last apply the dataplane accepted
	loggedGen uint64              // generation whose problems were logged
	atRest    *time.Timer         // releases memory once applies stop (releaseAtRest)
}

// apply configures the GatewayRouters first: the next hops that makes
// (static gateways are known at once) are programmed as the return path in
// the same pass, so that a new configuration (sllbrd starting) never has its
// VIPs programmed while their return table holds only the blackhole: the
// replies would be dropped, and with rp_filter the traffic to the VIPs too.
func (a *applier) apply(ctx context.Context, want reconcile.Desired) error {
	rtErr := a.routing.Apply(ctx, want.State.Routers)
	gateways := want.Gateways
	if a.gateways != nil {
		gateways = a.gateways()
	}
	// The endpoints this SLLBR finds dead are programmed not ready; the
	// VIPs served, and so announced, follow from the same state, so a VIP
	// whose Service has no live ready endpoint left is withdrawn.
	res, dpErr := a.dataplane.Apply(withoutDead(want.State, want.Dead), gateways)
	a.countMoves(want, dpErr)
	if dpErr == nil && want.State != nil {
		a.returnPath.observe(want.State.Routers, gateways)
	}
	a.releaseAtRest()
	if !res.RetireAt.IsZero() && a.rerunBy != nil {
		a.rerunBy(res.RetireAt)
	}
	a.metrics.ObserveApply(res.Generation, want.Changed, time.Now(), dpErr)
	a.problems(len(res.Problems))
	if res.Generation != a.loggedGen { // not again on every resync
		a.loggedGen = res.Generation
		for _, p := range res.Problems {
			a.log.Warn("configuration problem", "generation", res.Generation, "problem", p)
		}
	}
	annErr := a.announce(ctx, res.ServedVIPs, gateways, dpErr != nil, want.GatewayGone)
	errs := []error{
		a.observe(componentDataplane, res.Generation, dpErr),
		a.observe(componentRouters, res.Generation, rtErr),
		a.observe(componentAnnounce, res.Generation, annErr),
	}
	if dpErr == nil && !want.Changed.IsZero() {
		a.log.Info("dataplane programmed", "generation", res.Generation, "vips", len(res.VIPs),
			"served_vips", len(res.ServedVIPs), "endpoints", res.Endpoints, "latency", time.Since(want.Changed).String())
	}
	return errors.Join(errs...)
}

// countMoves counts, once the dataplane accepted a new dead set, the Maglev
// entries that the change of the dead set moved (livenessMoves).
func (a *applier) countMoves(want reconcile.Desired, dpErr error) {
	if dpErr != nil || maps.Equal(a.dead, want.Dead) {
		return
	}
	if a.moved != nil {
		a.moved(livenessMoves(want.State, a.dead, want.Dead))
	}
	a.dead = want.Dead
}

// restDelay is how long after the last apply the memory it used goes back
// to the operating system.
const restDelay = time.Second

// releaseAtRest returns the memory the applies used to the operating system
// once none followed for restDelay. An apply of the kernel path encodes
// nftables transactions of tens of thousands of map entries (megabytes
// that are garbage once sent); left to the runtime, that memory stays
// resident until a GC happens to run, which an idle daemon does every two
// minutes at most. One GC and release per quiet period costs about a
// millisecond; the packet path allocates nothing and is not held up.
func (a *applier) releaseAtRest() {
	if a.atRest == nil {
		a.atRest = time.AfterFunc(restDelay, debug.FreeOSMemory)
		return
	}
	a.atRest.Reset(restDelay)
}

// observe counts a component's outcome and logs a failure; it returns the
// failure named after the component. A BGP speaker already shut down (sllbrd
// is stopping: the VIPs were withdrawn on purpose) is not a failure.
func (a *applier) observe(component string, generation uint64, err error) error {
	if errors.Is(err, bgp.ErrClosed) {
		err = nil
	}
	a.metrics.ObserveComponent(component, err)
	if err == nil {
		return nil
	}
	a.log.Error("applying the configuration failed; will retry", "component", component, "generation", generation, "err", err)
	return fmt.Errorf("%s: %w", component, err)
}

// announce advertises the VIPs that are programmed and served and whose
// family has a gateway in the return path just programmed (withReturnPath).
// After a failed dataplane apply it only keeps VIPs already announced: it
// never starts attracting traffic for something the kernel may not carry.
// When the Gateway is gone it announces nothing.
func (a *applier) announce(ctx context.Context, served []netip.Addr, gateways []route.Nexthop, dpFailed, gatewayGone bool) error {
	vips, held := withReturnPath(served, gateways)
	switch {
	case gatewayGone:
		vips, held = nil, 0
	case dpFailed:
		vips, held = slices.DeleteFunc(slices.Clone(served), func(v netip.Addr) bool { return !slices.Contains(a.announced, v) }), 0
	}
	if held != a.held {
		a.log.Info("VIPs held back from BGP until the return path has a gateway of their family", "held", held, "announced", len(vips))
		a.held = held
	}
	if err := a.routing.Announce(ctx, vips); err != nil {
		return err
	}
	if gatewayGone && len(a.announced) > 0 {
		a.log.Warn("the Gateway is gone: its VIPs are withdrawn", "vips", len(a.announced))
	}
	a.announced = vips
	return nil
}
