package dataplane

import (
	"github.com/sllbrd/sllbrd/dataplane/flowkey"
	"github.com/sllbrd/sllbrd/dataplane/packet"
)

// choice is where a snapshot sends a decoded packet that is not a later
// fragment: the decision itself, shared by Decide (which then counts it and
// remembers first fragments) and Explain (which only reports it).
type choice struct {
	reason Reason       // ReasonBalanced, ReasonNoRoute or ReasonNoEndpoint
	route  int          // index of the matched route; -1 when none
	target *routeTarget // the matched route's target; nil when none
	fam    *familyTable // the family table looked up; nil before the lookup
	hash   uint32       // the flow hash looked up in fam (flowkey.Hash)
	slot   int          // the endpoint slot chosen (ReasonBalanced only)
	mark   uint32       // the slot's fwmark (ReasonBalanced only)
}

// choose classifies p against the snapshot's routes and picks the endpoint
// slot of the matched route's Service with Maglev. It reads the snapshot
// only: no counter, no fragment table. It allocates nothing.
func (s *snapshot) choose(p *packet.Packet) choice {
	idx, ok := s.routes.Lookup(p)
	if !ok {
		return choice{reason: ReasonNoRoute, route: -1}
	}
	c := choice{reason: ReasonNoEndpoint, route: idx, target: &s.perRoute[idx]}
	svc := c.target.service
	if svc == nil {
		return c
	}
	c.fam = svc.family(p.Family == 4)
	c.hash = flowkey.Hash(p, svc.sctpPortsOnly)
	slot, ok := c.fam.table.Lookup32(c.hash)
	if !ok {
		return c
	}
	c.reason, c.slot, c.mark = ReasonBalanced, slot, svc.marks[slot]
	return c
}
