package uplink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/bgp"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/model"
)

// Speaker is what Uplink needs of the BGP speaker (*bgp.Speaker).
type Speaker interface {
	Apply(ctx context.Context, routers []model.Router) error
	Announce(ctx context.Context, vips []netip.Addr) error
	PeerDown(ctx context.Context, addr netip.Addr, reason string) error
	PeerUp(ctx context.Context, addr netip.Addr) error
	EstablishedSince(addr netip.Addr) (time.Time, bool)
	Shutdown(ctx context.Context, drain time.Duration) error
	GatewayUpdates() <-chan bgp.Gateways
}

// Uplink owns the BGP speaker and the BFD server.
type Uplink struct {
	log        *slog.Logger
	speaker    Speaker
	bfd        *bfd.Server
	onGateways func([]route.Nexthop)
	now        func() time.Time
	after      scheduler

	act sync.Mutex // serialises coupling actions (taken before mu)

	mu      sync.Mutex
	ctx     context.Context // set by Run; used by BFD event handling
	closed  bool            // Shutdown began: no more coupling actions
	routers map[netip.Addr]model.Router
	peers   map[netip.Addr]*coupling // routers with BFD enabled
	bgpGWs  bgp.Gateways
	others  func(bfd.Event) // HandleOtherSessions; nil: none
}

// New couples speaker with a new BFD server (built with bfdOpts).
// onGateways receives every change of the return path's next hops. Whether
// BGP sessions wait for their first BFD Up is the speaker's business
// (bgp.WithWaitForBFD): the Uplink reports every BFD Up to it.
func New(log *slog.Logger, speaker Speaker, onGateways func([]route.Nexthop), bfdOpts ...bfd.Option) *Uplink {
	u := &Uplink{log: log, speaker: speaker, onGateways: onGateways, now: time.Now, after: afterFunc,
		routers: map[netip.Addr]model.Router{}, peers: map[netip.Addr]*coupling{}}
	u.bfd = bfd.NewServer(append([]bfd.Option{bfd.WithLogger(log), bfd.WithEventHandler(u.onBFD)}, bfdOpts...)...)
	return u
}

// BFD returns the BFD server: for metrics, and for the SLLBR's other BFD
// sessions (HandleOtherSessions), since only one server can listen on the
// BFD ports.
func (u *Uplink) BFD() *bfd.Server { return u.bfd }

// RouterSessionStats returns the statistics of the gateway routers'
// sessions only, not of the server's other sessions (HandleOtherSessions),
// in no particular order.
func (u *Uplink) RouterSessionStats() []bfd.Stats {
	u.mu.Lock()
	keys := make(map[bfd.Key]bool, len(u.peers))
	for _, c := range u.peers {
		keys[c.session] = true
	}
	u.mu.Unlock()
	var out []bfd.Stats
	for _, s := range u.bfd.AllStats() {
		if keys[s.Key] {
			out = append(out, s)
		}
	}
	return out
}

// HandleOtherSessions sets f to receive the events of the sessions of BFD()
// that are not the Uplink's: those another part of the SLLBR adds (endpoint
// liveness), and the late events of router sessions the Uplink removed. f
// must match each event to its own sessions by Key and LocalDiscriminator
// and ignore the rest. It is called on the BFD server's event goroutine, in
// order, without the Uplink's locks, whether the Uplink runs or is shutting
// down, and must not block for long. Set it before adding such sessions:
// their earlier events are not kept.
func (u *Uplink) HandleOtherSessions(f func(bfd.Event)) {
	u.mu.Lock()
	u.others = f
	u.mu.Unlock()
}

// Run runs BFD and follows the speaker's learned gateways until ctx ends.
func (u *Uplink) Run(ctx context.Context) error {
	u.mu.Lock()
	u.ctx = ctx
	u.mu.Unlock()
	errc := make(chan error, 1)
	go func() { errc <- u.bfd.Run(ctx) }()
	for {
		select {
		case <-ctx.Done():
			if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("bfd: %w", err)
			}
			return nil
		case err := <-errc:
			if err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("bfd: %w", err)
			}
			<-ctx.Done()
			return nil
		case g := <-u.speaker.GatewayUpdates():
			u.mu.Lock()
			u.bgpGWs = g
			u.mu.Unlock()
			u.publish()
		}
	}
}

// Apply sets the GatewayRouters: BGP peers and BFD sessions are added,
// changed or removed; unchanged ones are not touched. A router removed, or
// whose BFD is switched off, loses its BFD state and pending timers. It is
// idempotent: calling it again with the same routers retries what failed.
func (u *Uplink) Apply(ctx context.Context, routers []model.Router) error {
	u.act.Lock()
	defer u.act.Unlock()
	u.mu.Lock()
	prev := u.routers
	next := make(map[netip.Addr]model.Router, len(routers))
	for _, r := range routers {
		next[r.Address] = r
	}
	u.routers = next
	errs := u.syncBFDLocked()
	u.mu.Unlock()
	if err := u.speaker.Apply(ctx, routers); err != nil {
		errs = append(errs, fmt.Errorf("bgp: %w", err))
	}
	u.startBGPOverUpBFD(prev)
	u.publish()
	return errors.Join(errs...)
}

// startBGPOverUpBFD schedules the BGP bring-up of every router that gained
// BGP while its BFD session was already Up (a static router turned into a
// BGP one, with the same BFD session): no BFD event will come to bring it
// up, and a speaker that waits for the first BFD Up (bgp.WithWaitForBFD)
// would hold the peer down until BFD flaps. The bring-up goes through the
// damping like one after a BFD Up. u.act is held.
func (u *Uplink) startBGPOverUpBFD(prev map[netip.Addr]model.Router) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ctx == nil || u.closed {
		return // not running: the BFD events after Run bring BGP up
	}
	for addr, c := range u.peers {
		if u.routers[addr].BGP != nil && prev[addr].BGP == nil && c.up {
			c.cancel()
			u.scheduleUpLocked(u.ctx, c, addr, u.now())
		}
	}
}

// Announce sets the VIPs to advertise.
func (u *Uplink) Announce(ctx context.Context, vips []netip.Addr) error {
	return u.speaker.Announce(ctx, vips)
}

// Shutdown withdraws the VIPs, waits drain while traffic still flows, stops
// BGP, then tells the BFD peers we go administratively down. Pending
// damping timers are cancelled first and BFD changes are no longer acted
// upon.
func (u *Uplink) Shutdown(ctx context.Context, drain time.Duration) error {
	u.mu.Lock()
	u.closed = true
	for _, c := range u.peers {
		c.cancel()
	}
	u.mu.Unlock()
	err := u.speaker.Shutdown(ctx, drain)
	return errors.Join(err, u.bfd.Shutdown(ctx))
}

// publish hands the current next hops to the callback.
func (u *Uplink) publish() {
	u.mu.Lock()
	up := make(map[netip.Addr]bool, len(u.peers))
	for addr, c := range u.peers {
		up[addr] = c.up
	}
	hops := nexthops(u.routers, up, u.bgpGWs)
	u.mu.Unlock()
	u.onGateways(hops)
}

// nexthops are the BGP gateways with a default route plus the static
// routers that are up, sorted, each once.
func nexthops(routers map[netip.Addr]model.Router, bfdUp map[netip.Addr]bool, learned bgp.Gateways) []route.Nexthop {
	var out []route.Nexthop
	for _, g := range append(slices.Clone(learned.IPv4), learned.IPv6...) {
		hop := g.NextHop
		if !hop.IsValid() || hop.IsUnspecified() {
			hop = g.Peer
		}
		out = append(out, route.Nexthop{Addr: hop, Interface: g.Interface})
	}
	for addr, r := range routers {
		if r.BGP == nil && (!r.BFD.Enabled || bfdUp[addr]) {
			out = append(out, route.Nexthop{Addr: addr, Interface: r.Interface})
		}
	}
	slices.SortFunc(out, func(a, b route.Nexthop) int { return a.Addr.Compare(b.Addr) })
	return slices.CompactFunc(out, func(a, b route.Nexthop) bool { return a == b })
}
