package dataplane

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/classify"
	"github.com/sllbrd/sllbrd/maglev"
	"github.com/sllbrd/sllbrd/model"
)

// Plan is a configuration built and ready to be committed.
type Plan struct {
	// Endpoints lists every endpoint slot with its fwmark, sorted by Service
	// and identifier: the policy routes to program before Commit.
	Endpoints []EndpointMark
	// Problems lists what was left out: invalid routes, unknown Services,
	// endpoints with unusable identifiers. The rest of the plan is valid.
	Problems []error
	// VIPs are the destinations of the valid routes: what to queue.
	VIPs []netip.Addr
	// ServedVIPs are the VIPs with at least one valid route whose Service has
	// a ready endpoint of the VIP's family: what to announce.
	ServedVIPs []netip.Addr

	snap  *snapshot
	marks markPlan
	// The counters the plan counts on: Commit retires the others.
	routeIDs, endpointIDs []uint16
}

// Build compiles st into a Plan without touching the hot path. It fails only
// when the plan cannot be made at all (out of fwmarks); everything smaller is
// a Problem.
func (e *Engine) Build(st *model.State) (*Plan, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	plan := &Plan{}
	routes, problems := classify.Compile(st.Routes)
	plan.Problems = append(plan.Problems, problems...)

	services, keys, problems := e.buildServices(st.Services, plan)
	plan.Problems = append(plan.Problems, problems...)
	marks, err := e.marks.next(keys)
	if err != nil {
		return nil, err
	}
	plan.marks = marks

	for _, svc := range services {
		for slot := range svc.marks {
			svc.marks[slot] = marks.byKey[endpointKey{svc.name, slot}]
		}
	}
	for _, s := range st.Services {
		for _, ep := range s.Endpoints {
			if m, ok := marks.byKey[endpointKey{s.Name, ep.ID}]; ok {
				plan.Endpoints = append(plan.Endpoints, EndpointMark{Service: s.Name, ID: ep.ID, Addr: ep.Addr, Ready: ep.Ready, Mark: m})
			}
		}
	}
	slices.SortFunc(plan.Endpoints, func(a, b EndpointMark) int {
		if a.Service != b.Service {
			return cmp.Compare(a.Service, b.Service)
		}
		return a.ID - b.ID
	})

	snap := &snapshot{generation: st.Generation, routes: routes, services: services, perRoute: make([]routeTarget, routes.Len())}
	for i := range snap.perRoute {
		t := &snap.perRoute[i]
		t.counterID = e.routeCounters.get(routes.Name(i), routes.Service(i))
		plan.routeIDs = append(plan.routeIDs, t.counterID)
		t.service = services[routes.Service(i)]
		if t.service == nil {
			plan.Problems = append(plan.Problems, fmt.Errorf("l34route %q: backend Service %q does not exist: its traffic is dropped", routes.Name(i), routes.Service(i)))
		}
	}
	plan.VIPs, plan.ServedVIPs = vips(routes, services)
	plan.snap = snap
	return plan, nil
}

// vips lists the destinations of the compiled routes, and those a ready
// endpoint can serve, each once and sorted.
func vips(routes *classify.Table, services map[string]*serviceTable) (all, served []netip.Addr) {
	seen, ok := map[netip.Addr]bool{}, map[netip.Addr]bool{}
	for i := range routes.Len() {
		svc := services[routes.Service(i)]
		for _, d := range routes.Route(i).Destinations {
			a := d.Addr()
			seen[a] = true
			if svc != nil && svc.family(a.Is4()).table.ActiveSlots() > 0 {
				ok[a] = true
			}
		}
	}
	for a := range seen {
		all = append(all, a)
		if ok[a] {
			served = append(served, a)
		}
	}
	slices.SortFunc(all, netip.Addr.Compare)
	slices.SortFunc(served, netip.Addr.Compare)
	return all, served
}

// Commit publishes p: the next packet is decided with it. The counters of
// routes and endpoints p no longer has are retired, and deleted after the
// counter grace (see EachRoute).
func (e *Engine) Commit(p *Plan) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.marks = p.marks
	e.snap.Store(p.snap)
	now := time.Now()
	e.routeCounters.commit(p.routeIDs, now)
	e.endpointCounters.commit(p.endpointIDs, now)
}

// buildServices makes one Maglev table per valid Service, reusing the
// committed table of a Service whose slots did not change.
func (e *Engine) buildServices(in []model.Service, plan *Plan) (map[string]*serviceTable, []endpointKey, []error) {
	var problems []error
	var keys []endpointKey
	out := make(map[string]*serviceTable, len(in))
	previous := e.committedServices()
	for _, s := range in {
		if _, dup := out[s.Name]; dup {
			problems = append(problems, fmt.Errorf("service %q: defined twice, the second is ignored", s.Name))
			continue
		}
		svc, svcKeys, errs := e.buildService(s, previous[s.Name], plan)
		problems = append(problems, errs...)
		if svc != nil {
			out[s.Name] = svc
			keys = append(keys, svcKeys...)
		}
	}
	return out, keys, problems
}

func (e *Engine) buildService(s model.Service, prev *serviceTable, plan *Plan) (*serviceTable, []endpointKey, []error) {
	if s.MaxEndpoints < 1 || s.MaxEndpoints > maglev.MaxSlots {
		return nil, nil, []error{fmt.Errorf("service %q: max endpoints %d outside 1..%d", s.Name, s.MaxEndpoints, maglev.MaxSlots)}
	}
	n := s.MaxEndpoints
	svc := &serviceTable{name: s.Name, maxEndpoints: n, sctpPortsOnly: s.SCTPHashPorts, marks: make([]uint32, n)}
	for _, f := range []*familyTable{&svc.ipv4, &svc.ipv6} {
		f.active, f.endpoints, f.counterIDs = make([]bool, n), make([]bool, n), make([]uint16, n)
	}
	var keys []endpointKey
	var problems []error
	hasSlot := make([]bool, n)
	for _, ep := range s.Endpoints {
		if why := endpointFault(ep, svc); why != "" {
			problems = append(problems, fmt.Errorf("service %q: endpoint %s (identifier %d): %s: skipped", s.Name, ep.Addr, ep.ID, why))
			continue
		}
		f := svc.family(ep.Addr.Unmap().Is4())
		f.active[ep.ID], f.endpoints[ep.ID] = ep.Ready, true
		f.counterIDs[ep.ID] = e.endpointCounters.get(s.Name, strconv.Itoa(ep.ID), ep.Addr.String())
		plan.endpointIDs = append(plan.endpointIDs, f.counterIDs[ep.ID])
		if !hasSlot[ep.ID] {
			hasSlot[ep.ID] = true
			keys = append(keys, endpointKey{s.Name, ep.ID})
		}
	}
	for _, fam := range []struct {
		f, prev *familyTable
	}{{&svc.ipv4, prevFamily(prev, true, n)}, {&svc.ipv6, prevFamily(prev, false, n)}} {
		if fam.prev != nil && slices.Equal(fam.prev.active, fam.f.active) {
			fam.f.table = fam.prev.table // unchanged slots: keep the built table
			continue
		}
		t, err := maglev.Build(n, fam.f.active)
		if err != nil {
			return nil, nil, append(problems, fmt.Errorf("service %q: %w", s.Name, err))
		}
		fam.f.table = t
	}
	return svc, keys, problems
}

// endpointFault says why ep cannot be used in svc, or "".
func endpointFault(ep model.Endpoint, svc *serviceTable) string {
	switch {
	case ep.ID < 0 || ep.ID >= svc.maxEndpoints:
		return fmt.Sprintf("identifier outside 0..%d", svc.maxEndpoints-1)
	case !ep.Addr.IsValid():
		return "no address"
	case svc.family(ep.Addr.Unmap().Is4()).endpoints[ep.ID]:
		return "identifier already used by another endpoint of this address family"
	}
	return ""
}

// prevFamily returns the committed table of the same Service and family when
// it can be reused (same slot count).
func prevFamily(prev *serviceTable, is4 bool, n int) *familyTable {
	if prev == nil || prev.maxEndpoints != n {
		return nil
	}
	return prev.family(is4)
}

func (e *Engine) committedServices() map[string]*serviceTable {
	if s := e.snap.Load(); s != nil {
		return s.services
	}
	return nil
}
