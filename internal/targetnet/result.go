package targetnet

import (
	"net/netip"
	"slices"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// GatewayResult is what the kernel holds for one Gateway after an Apply.
type GatewayResult struct {
	Name  string
	Table uint32
	// VIPs are the Gateway's VIPs that are local addresses (ours, or
	// foreign ones reported as conflicts) and have their rule in place.
	VIPs []netip.Prefix
	// NextHops are the next hops of the table's default routes, both
	// families, sorted.
	NextHops []netip.Addr
	// Interfaces names the interface of the next hops, per family.
	Interfaces map[Family]string
	// Kept lists the families whose next hops are the last ones seen: the
	// desired configuration has none (no SLLBR pod ready).
	Kept []Family
	// Down are the desired next hops left out of the routes because they
	// were found down (Gateway.Down), both families, sorted.
	Down []netip.Addr
	// AllDown lists the families whose desired next hops were all found
	// down: all of them are in the route.
	AllDown []Family
}

// Result is the state after an Apply.
type Result struct {
	Gateways []GatewayResult
	// Conflicts describe foreign configuration in the way, left as it is.
	Conflicts []string
}

// VIPCount returns the number of VIPs in place over all Gateways.
func (r Result) VIPCount() int {
	n := 0
	for _, g := range r.Gateways {
		n += len(g.VIPs)
	}
	return n
}

// NextHopCount returns the next hops of family f in place over all Gateways.
func (r Result) NextHopCount(f Family) int {
	n := 0
	for _, g := range r.Gateways {
		for _, h := range g.NextHops {
			if tableroute.FamilyOf(h) == f {
				n++
			}
		}
	}
	return n
}

func result(d Desired, obs observed, p plan) Result {
	res := Result{Conflicts: p.conflicts}
	for _, g := range d.Gateways {
		gr := GatewayResult{Name: g.Name, Table: g.Table, Interfaces: map[Family]string{}, Kept: p.kept[g.Name], AllDown: p.allDown[g.Name]}
		for _, v := range g.VIPs {
			if obs.ourRules[ourRule(v, g.Table)] && obs.local(v.Addr()) {
				gr.VIPs = append(gr.VIPs, v)
			}
		}
		for _, f := range Families {
			r, ok := obs.routes[tableroute.Key{Family: f, Table: g.Table, Metric: NextHopMetric}]
			if !ok || r.Blackhole {
				continue
			}
			for _, h := range r.Hops {
				gr.NextHops = append(gr.NextHops, h.Gateway)
				if name, ok := obs.links[h.IfIndex]; ok {
					gr.Interfaces[f] = name
				}
			}
		}
		slices.SortFunc(gr.NextHops, netip.Addr.Compare)
		for _, h := range p.down[g.Name] {
			if !slices.Contains(gr.NextHops, h) { // not if replacing the route failed
				gr.Down = append(gr.Down, h)
			}
		}
		slices.SortFunc(gr.Down, netip.Addr.Compare)
		res.Gateways = append(res.Gateways, gr)
	}
	return res
}
