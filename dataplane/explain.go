package dataplane

import (
	"fmt"
	"net/netip"

	"github.com/sllbrd/sllbrd/dataplane/packet"
)

// Explanation is what Decide does with a Probe, and why.
type Explanation struct {
	// Generation is the configuration the probe was decided with (0: none
	// committed yet).
	Generation uint64
	// Kind is how the decoder read the probe.
	Kind    packet.Kind
	Verdict Verdict
	Reason  Reason
	Mark    uint32 // the fwmark given (Accept only)

	// Route is the route matched; nil when none did (Misses says why).
	Route *ExplainedRoute
	// Misses lists why each route of the destination ranked above the
	// matched one (all of them when none matched) did not match.
	Misses []RouteMiss

	// The Maglev lookup, when the route's Service exists.
	Balanced    bool   // a lookup was made: the route's Service exists
	Family      uint8  // 4 or 6: the table looked up
	Hash        uint32 // the flow hash looked up (the kernel path's jhash)
	TableSize   int    // M, the entries of the family's table
	ActiveSlots int    // slots owning entries (ready endpoints of the family)
	// Endpoint is the slot chosen (nil: no ready endpoint of the family).
	Endpoint *ExplainedEndpoint
}

// ExplainedRoute is a route matched by Explain.
type ExplainedRoute struct {
	Name     string
	Priority int32
	Service  string
	Rank     int // position in precedence order, 0 first
}

// RouteMiss says why one route did not match (classify.Miss, with the
// route's name). Route is "" when the miss concerns no single route.
type RouteMiss struct {
	Route    string
	Priority int32
	Check    string
	Detail   string
}

// ExplainedEndpoint is the endpoint slot Explain chose.
type ExplainedEndpoint struct {
	ID      int
	Addr    netip.Addr // the slot's address of the probe's family
	Mark    uint32
	Ready   bool
	Entries int // table entries the slot owns
}

// Explain runs the decision of Decide on the synthetic packet pr built,
// with the committed configuration, and reports each step. It is
// read-only: no counter is incremented and the fragment table is not
// touched (the probe is never a fragment). It allocates; it is for
// people, not the packet path.
func (e *Engine) Explain(pr Probe) (Explanation, error) {
	if err := pr.validate(); err != nil {
		return Explanation{}, fmt.Errorf("probe: %w", err)
	}
	b, _ := pr.bytes()
	var p packet.Packet
	p.Decode(b)
	x := Explanation{Kind: p.Kind, Verdict: Drop}
	s := e.snap.Load()
	switch {
	case s == nil:
		x.Reason = ReasonNotConfigured
		return x, nil
	case p.Kind == packet.KindInvalid:
		x.Generation, x.Reason = s.generation, ReasonUndecodable
		return x, nil
	case p.Kind == packet.KindOther:
		x.Generation, x.Reason = s.generation, ReasonUnsupported
		return x, nil
	}
	x.Generation = s.generation
	c := s.choose(&p)
	x.Reason = c.reason
	x.Misses = s.misses(&p)
	if c.target == nil {
		return x, nil
	}
	x.Route = &ExplainedRoute{Name: s.routes.Name(c.route), Priority: s.routes.Route(c.route).Priority,
		Service: s.routes.Service(c.route), Rank: c.route}
	if c.fam == nil {
		return x, nil
	}
	x.Balanced, x.Family, x.Hash = true, p.Family, c.hash
	x.TableSize, x.ActiveSlots = c.fam.table.Size(), c.fam.table.ActiveSlots()
	if c.reason != ReasonBalanced {
		return x, nil
	}
	x.Verdict, x.Mark = Accept, c.mark
	x.Endpoint = &ExplainedEndpoint{ID: c.slot, Addr: e.endpointAddr(c.fam, c.slot), Mark: c.mark,
		Ready: c.fam.active[c.slot], Entries: c.fam.table.Entries(c.slot)}
	return x, nil
}

// misses names the routes classify.Table.Explain reports.
func (s *snapshot) misses(p *packet.Packet) []RouteMiss {
	var out []RouteMiss
	for _, m := range s.routes.Explain(p) {
		rm := RouteMiss{Check: m.Check, Detail: m.Detail}
		if m.Route >= 0 {
			rm.Route, rm.Priority = s.routes.Name(m.Route), s.routes.Route(m.Route).Priority
		}
		out = append(out, rm)
	}
	return out
}
