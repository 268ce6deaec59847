package targetpod

import (
	"slices"

	"github.com/sllbrd/sllbrd/internal/targetbfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// Liveness runs the BFD sessions the configuration applied asks for: a
// *targetbfd.Runner in the sidecar, one per pod in the node daemon. Set is
// called under the agent's lock and must not block.
type Liveness interface {
	Set(gws []targetbfd.Gateway)
}

var _ Liveness = (*targetbfd.Runner)(nil)

// WithLiveness makes the agent hand l, after each apply of the generation
// it last read, that generation's Gateways with Liveness, each with what
// the kernel holds for it (its next hops in place and their interfaces):
// BFD sessions only with next hops that are routed. An apply that could not
// read the kernel at all changes nothing; a pod that is not this agent's
// gets none (the other agent runs them).
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
			bg.NextHops, bg.Interfaces = res.Gateways[i].NextHops, res.Gateways[i].Interfaces
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
