package classify

import (
	"cmp"
	"slices"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/model"
)

// echoProto keys the per-address index that ICMP echo uses.
const echoProto = 0

// Table is a compiled, immutable set of routes. Its methods are safe for
// concurrent use; a nil *Table matches nothing.
type Table struct {
	rules  []rule        // in precedence order: index 0 wins over all others
	routes []model.Route // rules[i]'s normalised route
	keys   keyTable      // (destination, protocol) -> block in arena
	arena  []uint32      // the blocks, see index.go
}

// Compile validates routes and builds a Table of the valid ones. Each
// invalid route is skipped and reported by one or more *RouteError; a route
// whose name repeats an earlier valid route's is skipped too.
func Compile(routes []model.Route) (*Table, []error) {
	var errs []error
	var valid []model.Route
	seen := make(map[string]bool, len(routes))
	for _, r := range routes {
		compiled, problems := newRule(r)
		switch {
		case len(problems) > 0:
			errs = append(errs, problems...)
		case seen[r.Name]:
			errs = append(errs, routeErr(r.Name, "name", "", "is used by another route"))
		default:
			seen[r.Name] = true
			valid = append(valid, compiled)
		}
	}
	slices.SortFunc(valid, func(a, b model.Route) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.Name, b.Name))
	})
	return build(valid), errs
}

// build indexes normalised routes already in precedence order.
func build(routes []model.Route) *Table {
	t := &Table{routes: routes, rules: make([]rule, len(routes))}
	byKey := make(map[key][]int32)
	var order []key // first-seen order, so that builds are deterministic
	add := func(k key, rank int32) {
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], rank)
	}
	for rank, r := range routes {
		t.rules[rank] = ruleOf(r)
		for _, d := range r.Destinations {
			add(keyOf(d.Addr(), echoProto), int32(rank))
			for _, proto := range r.Protocols {
				add(keyOf(d.Addr(), proto), int32(rank))
			}
		}
	}
	t.keys = newKeyTable(len(order))
	for _, k := range order {
		var block uint32
		t.arena, block = buildBlock(t.arena, t.keyRoutes(k, byKey[k]))
		t.keys.insert(k, block)
	}
	return t
}

// keyRoutes describes the routes of key k for buildBlock.
func (t *Table) keyRoutes(k key, ranks []int32) keyRoutes {
	if k.proto == echoProto {
		return keyRoutes{
			ranks:         ranks,
			portsOf:       func(int32) []model.PortRange { return nil },
			unconditional: func(rank int32, _ bool) bool { return t.rules[rank].anySource },
		}
	}
	return keyRoutes{
		ranks:   ranks,
		portsOf: func(rank int32) []model.PortRange { return t.rules[rank].dstPorts },
		unconditional: func(rank int32, checkDstPort bool) bool {
			r := &t.rules[rank]
			return r.anySource && r.srcPorts == nil && (!checkDstPort || r.dstPorts == nil) &&
				!slices.ContainsFunc(r.bytes, func(m model.ByteMatch) bool { return m.Protocol == k.proto })
		},
	}
}

// Lookup returns the index (see Route) of the highest-precedence route the
// packet matches, following the rules in the package documentation. It
// allocates nothing.
func (t *Table) Lookup(p *packet.Packet) (idx int, ok bool) {
	if t == nil {
		return -1, false
	}
	proto := p.Proto
	switch {
	case p.IsEcho(): // whole or its first fragment
		proto = echoProto
	case p.Kind == packet.KindTransport, p.Kind == packet.KindFirstFragment, p.Kind == packet.KindICMPError:
	default:
		return -1, false
	}
	block, found := t.keys.find(keyOf(p.Dst, proto))
	if !found {
		return -1, false
	}
	cands, checkDstPort := candidates(t.arena, block, p.DstPort)
	for _, c := range cands {
		rank := int(c & rankMask)
		switch {
		case c&candUnconditional != 0:
			return rank, true
		case proto == echoProto:
			if t.rules[rank].admitsSource(p.Src.Unmap()) {
				return rank, true
			}
		case t.rules[rank].matchesFlow(p, p.Src.Unmap(), checkDstPort):
			return rank, true
		}
	}
	return -1, false
}

// Len returns the number of routes in the table.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.rules)
}

// Name returns the name (namespace/name) of route idx, e.g. to label counters.
func (t *Table) Name(idx int) string { return t.routes[idx].Name }

// Service returns the backend Service of route idx.
func (t *Table) Service(idx int) string { return t.routes[idx].Service }

// Route returns a copy of route idx as compiled: addresses unmapped,
// prefixes masked, duplicates removed, port ranges sorted and merged (nil
// when they cover every port).
func (t *Table) Route(idx int) model.Route { return cloneRoute(t.routes[idx]) }

// Routes returns copies of all routes in precedence order, so that
// Routes()[i] is Route(i).
func (t *Table) Routes() []model.Route {
	out := make([]model.Route, t.Len())
	for i := range out {
		out[i] = t.Route(i)
	}
	return out
}

func cloneRoute(r model.Route) model.Route {
	r.Destinations = slices.Clone(r.Destinations)
	r.Sources = slices.Clone(r.Sources)
	r.SourcePorts = slices.Clone(r.SourcePorts)
	r.DestinationPorts = slices.Clone(r.DestinationPorts)
	r.Protocols = slices.Clone(r.Protocols)
	r.ByteMatches = slices.Clone(r.ByteMatches)
	return r
}
