package targetpod

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/sllbrd/sllbrd/internal/targetbfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// Liveness runs the BFD sessions the configuration applied asks for: a
// *targetbfd.Runner in the sidecar, one per pod in the node daemon. Set
// and Down are called under the agent's lock and must not block.
type Liveness interface {
	Set(gws []targetbfd.Gateway)
	// Down returns the next hops whose session says they are down
	// (targetbfd.Runner.Down).
	Down() []netip.Addr
	// DownChanged receives a value (coalesced) when Down has changed.
	DownChanged() <-chan struct{}
}

var _ Liveness = (*targetbfd.Runner)(nil)

// WithLiveness makes the agent hand l, after each apply of the generation
// it last read, that generation's Gateways with Liveness, each with what
// the kernel holds for it (its next hops in place and their interfaces,
// and those left out as down): BFD sessions only with next hops that are
// routed or left out as down. An apply that could not read the kernel at
// all changes nothing; a pod that is not this agent's gets none (the other
// agent runs them).
//
// The agent also leaves the next hops l finds down out of the routes of
// those Gateways (targetnet.Gateway.Down; never every next hop of a
// family), and applies the same generation again, through its one loop,
// each time l's Down changes: a reply sent through an SLLBR that cannot
// reach the pod (or that is stopping) is lost, and any SLLBR forwards any
// reply (the reply path keeps no state), so a next hop leaves as soon as
// its session is down and comes back as soon as it is Up again, with no
// hold-down.
func WithLiveness(l Liveness) AgentOption { return func(a *PodAgent) { a.liveness = l } }

// withLiveness returns the Gateways of gws that ask for liveness.
func withLiveness(gws []Gateway) []Gateway {
	return slices.DeleteFunc(slices.Clone(gws), func(g Gateway) bool { return g.Liveness == nil })
}

// livenessGateways returns the Gateways of gws (with Liveness), each with
// what res says the kernel holds for it; one that res does not list has no
// next hop.
func livenessGateways(gws []Gateway, res targetnet.Result) []targetbfd.Gateway {
	out := make([]targetbfd.Gateway, 0, len(gws))
	for _, g := range gws {
		bg := targetbfd.Gateway{Name: g.Name, Interval: g.Liveness.Interval(), Multiplier: g.Liveness.Multiplier, Subnets: g.Subnets}
		if i := slices.IndexFunc(res.Gateways, func(r targetnet.GatewayResult) bool { return r.Name == g.Name }); i >= 0 {
			r := res.Gateways[i]
			bg.NextHops, bg.Interfaces, bg.Down, bg.AllDown = r.NextHops, r.Interfaces, r.Down, r.AllDown
		}
		out = append(out, bg)
	}
	return out
}

// reportLiveness hands the liveness runner the outcome o of an apply, under
// a.mu (see WithLiveness).
func (a *PodAgent) reportLiveness(o targetnet.Outcome) {
	read := o.Err == nil || len(o.Result.Gateways) > 0 || len(a.setNet.Gateways) == 0
	if a.liveness == nil || a.refused != "" || o.Generation != a.setGen || !read {
		return
	}
	a.liveness.Set(livenessGateways(a.setLive, o.Result))
}

// watchDown applies the configuration again each time the liveness' Down
// changes the next hops to leave out, until done is closed.
func (a *PodAgent) watchDown(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-a.liveness.DownChanged():
		}
		a.mu.Lock()
		if a.looping {
			if _, marks := a.withDown(a.setNet); !maps.EqualFunc(marks, a.loopDown, slices.Equal) {
				a.log.Debug("next hops found down changed: applying again", "down", marks)
				a.setLoopNet()
			}
		}
		a.mu.Unlock()
	}
}

// withDown returns d with the next hops the liveness finds down marked on
// the Gateways with Liveness (targetnet leaves them out of the routes,
// never every one of a family), and those marks by Gateway; under a.mu.
func (a *PodAgent) withDown(d targetnet.Desired) (targetnet.Desired, map[string][]netip.Addr) {
	marks := map[string][]netip.Addr{}
	if a.liveness == nil || len(a.setLive) == 0 {
		return d, marks
	}
	down := a.liveness.Down()
	if len(down) == 0 {
		return d, marks
	}
	out := targetnet.Desired{Gateways: slices.Clone(d.Gateways)}
	for i := range out.Gateways {
		g := &out.Gateways[i]
		if !slices.ContainsFunc(a.setLive, func(l Gateway) bool { return l.Name == g.Name }) {
			continue
		}
		g.Down = slices.DeleteFunc(slices.Clone(g.NextHops), func(h netip.Addr) bool { return !slices.Contains(down, h) })
		if len(g.Down) > 0 {
			marks[g.Name] = g.Down
		}
	}
	return out, marks
}

// setLoopNet hands the loop the configuration last set, with the next hops
// found down now; under a.mu.
func (a *PodAgent) setLoopNet() {
	d, marks := a.withDown(a.setNet)
	a.loopDown, a.looping = marks, true
	a.loop.Set(a.setGen, d)
}
