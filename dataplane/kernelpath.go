package dataplane

import (
	"maps"
	"slices"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
)

// kernelInput describes the plan for the kernel path's compiler: the same
// routes, Maglev tables and marks the userspace decision uses.
func (p *Plan) kernelInput(maxPayloadOffset int) fastpath.Input {
	in := fastpath.Input{Routes: p.snap.routes.Routes(), MaxPayloadOffset: maxPayloadOffset}
	byService := map[string][]fastpath.Endpoint{}
	for _, ep := range p.Endpoints {
		eps := byService[ep.Service]
		i := slices.IndexFunc(eps, func(e fastpath.Endpoint) bool { return e.ID == ep.ID })
		if i < 0 {
			eps = append(eps, fastpath.Endpoint{ID: ep.ID, Mark: ep.Mark})
			i = len(eps) - 1
		}
		if a := ep.Addr.Unmap(); a.Is4() {
			eps[i].IPv4 = a
		} else {
			eps[i].IPv6 = a
		}
		byService[ep.Service] = eps
	}
	for _, name := range slices.Sorted(maps.Keys(p.snap.services)) {
		svc := p.snap.services[name]
		s := fastpath.Service{Name: name, SCTPPortsOnly: svc.sctpPortsOnly, Endpoints: byService[name]}
		if svc.ipv4.table.ActiveSlots() > 0 {
			s.IPv4 = svc.ipv4.table.AppendEntrySlots(nil)
		}
		if svc.ipv6.table.ActiveSlots() > 0 {
			s.IPv6 = svc.ipv6.table.AppendEntrySlots(nil)
		}
		in.Services = append(in.Services, s)
	}
	return in
}

// AdoptMarks gives the endpoint slots the marks a previous run's kernel
// path left programmed (fastpath.AdoptedMarks), so that the first plan
// keeps them and the rules and routes stay as they are. Marks outside the
// engine's range and marks claimed twice are ignored. It must be called
// before the first Build; it returns how many marks it adopted.
func (e *Engine) AdoptMarks(marks []fastpath.Mark) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	used := map[uint32]bool{}
	for _, m := range e.marks.held {
		used[m] = true
	}
	for _, m := range e.marks.byKey {
		used[m] = true
	}
	n := 0
	for _, m := range marks {
		k := endpointKey{m.Service, m.ID}
		_, taken := e.marks.byKey[k]
		_, held := e.marks.held[k]
		if m.Mark < e.marks.first || m.Mark-e.marks.first >= e.marks.count || used[m.Mark] || taken || held {
			continue
		}
		e.marks.held[k] = m.Mark
		used[m.Mark] = true
		n++
	}
	return n
}
