package dataplane

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/fragment"
	"github.com/sllbrd/sllbrd/model"
)

// Inspection is a read-only view of the committed configuration and its
// counters, for people and tools (sllbrd show).
type Inspection struct {
	Generation uint64 // 0: nothing committed yet
	Routes     []RouteView
	Services   []ServiceView
}

// RouteView is one compiled route, in precedence order.
type RouteView struct {
	// Route is the route as compiled: addresses unmapped, port ranges
	// merged (nil: any port).
	Route model.Route
	// ServiceFound is false when the route's Service does not exist: its
	// traffic is dropped (ReasonNoEndpoint).
	ServiceFound bool
	Count        Count // packets and bytes matched since the route appeared
}

// ServiceView is one Service's Maglev tables and endpoints.
type ServiceView struct {
	Name          string
	MaxEndpoints  int
	SCTPHashPorts bool
	IPv4, IPv6    TableView
	Endpoints     []EndpointView // by identifier
}

// TableView is one address family's Maglev table of a Service.
type TableView struct {
	Size        int // M
	ActiveSlots int // ready endpoints owning entries
}

// EndpointView is one endpoint slot (identifier) of a Service: its mark,
// shared by both families, and its address of each family.
type EndpointView struct {
	ID         int
	Mark       uint32
	IPv4, IPv6 *EndpointFamilyView // nil: no address of that family
}

// EndpointFamilyView is one address of an endpoint slot.
type EndpointFamilyView struct {
	Addr    netip.Addr
	Ready   bool
	Entries int   // entries of the family's table the slot owns: Entries/Size is its share of flows
	Count   Count // packets and bytes sent to the address
}

// Inspect returns the committed configuration with its counters. It reads
// the snapshot and the counters only, and allocates; it is for people, not
// the packet path.
func (e *Engine) Inspect() Inspection {
	s := e.snap.Load()
	if s == nil {
		return Inspection{}
	}
	out := Inspection{Generation: s.generation}
	for i := range s.routes.Len() {
		rt := &s.perRoute[i]
		out.Routes = append(out.Routes, RouteView{Route: s.routes.Route(i), ServiceFound: rt.service != nil,
			Count: e.routeCounters.sum(rt.counterID)})
	}
	for _, svc := range s.services {
		out.Services = append(out.Services, e.serviceView(svc))
	}
	slices.SortFunc(out.Services, func(a, b ServiceView) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (e *Engine) serviceView(svc *serviceTable) ServiceView {
	v := ServiceView{Name: svc.name, MaxEndpoints: svc.maxEndpoints, SCTPHashPorts: svc.sctpPortsOnly,
		IPv4: tableView(&svc.ipv4), IPv6: tableView(&svc.ipv6)}
	for slot := range svc.maxEndpoints {
		ep := EndpointView{ID: slot, Mark: svc.marks[slot],
			IPv4: e.endpointFamily(&svc.ipv4, slot), IPv6: e.endpointFamily(&svc.ipv6, slot)}
		if ep.IPv4 != nil || ep.IPv6 != nil {
			v.Endpoints = append(v.Endpoints, ep)
		}
	}
	return v
}

func tableView(f *familyTable) TableView {
	return TableView{Size: f.table.Size(), ActiveSlots: f.table.ActiveSlots()}
}

// endpointFamily returns slot's address of family f, nil when it has none.
func (e *Engine) endpointFamily(f *familyTable, slot int) *EndpointFamilyView {
	if !f.endpoints[slot] {
		return nil
	}
	return &EndpointFamilyView{Addr: e.endpointAddr(f, slot), Ready: f.active[slot],
		Entries: f.table.Entries(slot), Count: e.endpointCounters.sum(f.counterIDs[slot])}
}

// endpointAddr returns the address of slot in family f. The snapshot keeps
// only the slot's counter; the counter's labels (service, identifier,
// address: see buildService) name the address.
func (e *Engine) endpointAddr(f *familyTable, slot int) netip.Addr {
	labels := e.endpointCounters.labels(f.counterIDs[slot])
	if len(labels) != 3 {
		return netip.Addr{} // overflowID: more endpoint addresses than counters
	}
	a, _ := netip.ParseAddr(labels[2])
	return a
}

// labels returns the label set of counter id (nil: free, or overflowID).
func (s *counterSet) labels(id uint16) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(id) >= len(s.entries) {
		return nil
	}
	return s.entries[id].labels
}

// FragmentView is the fragment table's use and counters.
type FragmentView struct {
	fragment.Usage
	Stats    fragment.Stats
	Lifetime time.Duration // how long a first fragment's decision is kept
}

// InspectFragments returns the fragment table's use at now and its
// counters. It takes each of the table's locks in turn: call it from
// inspection tools, not the packet path.
func (e *Engine) InspectFragments(now time.Time) FragmentView {
	return FragmentView{Usage: e.fragments.Usage(now), Stats: e.fragments.Stats(), Lifetime: e.fragmentLifetime}
}
