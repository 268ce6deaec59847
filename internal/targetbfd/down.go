package targetbfd

import (
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// Down returns the next hops found down (sorted): those whose session is
// not Up once it has been Up, or was taken down by the SLLBR (AdminDown),
// or has not come Up within Multiplier × Interval + bfd.UpSlack of being
// added. The agent leaves them out of their Gateways' routes
// (targetnet.Gateway.Down) and hands them back in Set (Gateway.Down), so
// that they keep their sessions and come back as soon as these are Up.
func (r *Runner) Down() []netip.Addr {
	r.hmu.Lock()
	defer r.hmu.Unlock()
	return slices.SortedFunc(maps.Keys(r.down), netip.Addr.Compare)
}

// DownChanged receives a value (coalesced: the channel holds one) when
// Down has changed since it was last read.
func (r *Runner) DownChanged() <-chan struct{} { return r.downCh }

// setSessions makes k hold w's sessions and the next hops' health follow:
// a session added or changed is recorded with its instance (read under
// hmu, before any of its events is applied), one gone is forgotten, and a
// fresh server starts every session again (health.restart).
func (r *Runner) setSessions(k *keeper, srv *bfd.Server, w Want, fresh bool) change {
	now := r.now()
	r.hmu.Lock()
	defer r.hmu.Unlock()
	if fresh {
		r.health.restart(now)
	}
	c := k.set(w.Sessions)
	for _, key := range append(slices.Clone(c.added), c.updated...) {
		cfg := w.Sessions[key]
		st, _ := srv.Stats(key)
		r.health.set(key, st.LocalDiscriminator, cfg.DesiredMinTx*time.Duration(cfg.DetectMultiplier), now)
	}
	r.health.retain(func(key bfd.Key) bool { _, ok := k.have[key]; return ok })
	return c
}

// evaluate takes the health's verdicts at now as Down, logs what changed,
// signals DownChanged when the set changed, and returns when a start grace
// ends next (zero: none). Safe for concurrent use (the server's events and
// Run call it).
func (r *Runner) evaluate() time.Time {
	now := r.now()
	r.hmu.Lock()
	down, next, prev := r.health.down(now), r.health.next(now), r.down
	r.down = down
	followed := map[netip.Addr]bool{}
	for k := range r.health.peers {
		followed[k.Peer] = true
	}
	r.hmu.Unlock()
	for _, h := range slices.SortedFunc(maps.Keys(down), netip.Addr.Compare) {
		if c := down[h]; prev[h] != c {
			r.log.Warn("next hop found down: left out of the routes of its Gateways with liveness while another next hop of its family is up",
				"next_hop", h, "why", c.String())
		}
	}
	for _, h := range slices.SortedFunc(maps.Keys(prev), netip.Addr.Compare) {
		if _, still := down[h]; !still && followed[h] {
			r.log.Info("next hop's BFD session is up: back in the routes of its Gateways", "next_hop", h)
		}
	}
	if !sameAddrs(prev, down) {
		select {
		case r.downCh <- struct{}{}:
		default:
		}
	}
	return next
}

// sameAddrs reports whether a and b hold the same addresses.
func sameAddrs(a, b map[netip.Addr]Cause) bool {
	if len(a) != len(b) {
		return false
	}
	for h := range a {
		if _, ok := b[h]; !ok {
			return false
		}
	}
	return true
}

// logRoutes logs and counts what the routes applied (cur, from the agent)
// say of the next hops found down, against the previous sync's (prev): the
// next hops left out of each Gateway's routes, and the families whose every
// next hop is down, kept all (counted once each time it begins).
func (r *Runner) logRoutes(prev, cur []Gateway) {
	before := map[string]Gateway{}
	for _, g := range prev {
		before[g.Name] = g
	}
	for _, g := range cur {
		was := before[g.Name]
		if !slices.Equal(was.Down, g.Down) {
			r.log.Info("next hops left out of the gateway's routes: their BFD session is down", "gateway", g.Name,
				"left_out", g.Down, "back", without(was.Down, g.Down))
		}
		for _, f := range g.AllDown {
			if !slices.Contains(was.AllDown, f) {
				r.counters.allDown.Add(1)
				r.log.Warn("every next hop of the gateway's family is down: all kept in its routes (never none)", "gateway", g.Name,
					"family", f, "next_hops", ofFamily(g.NextHops, f))
			}
		}
		for _, f := range was.AllDown {
			if !slices.Contains(g.AllDown, f) {
				r.log.Info("not every next hop of the gateway's family is down any more", "gateway", g.Name, "family", f)
			}
		}
	}
}

// without returns the items of a not in b.
func without(a, b []netip.Addr) []netip.Addr {
	return slices.DeleteFunc(slices.Clone(a), func(h netip.Addr) bool { return slices.Contains(b, h) })
}

func ofFamily(hops []netip.Addr, f targetnet.Family) []netip.Addr {
	return slices.DeleteFunc(slices.Clone(hops), func(h netip.Addr) bool { return h.Unmap().Is4() != (f == targetnet.IPv4) })
}
