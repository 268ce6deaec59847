package bpfpath

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/model"
)

// counterNone is bpf/counters.h's COUNTER_NONE.
const counterNone = 0xffff

// Count is packets and the bytes of their IP packets (IP header and
// payload, as the kernel path's nftables counters count them).
type Count struct{ Packets, Bytes uint64 }

// Action says what the program did with a packet (bpf/counters.h, enum
// action).
type Action uint32

// The actions, from the C enum through bpf2go's generated constants.
const (
	// ActionPunt: not decided, or not addressed to this host at layer 2:
	// to the stack unchanged (bytes: the frame less its Ethernet header).
	ActionPunt = Action(ingressActionACTION_PUNT)
	// ActionMark: decided, its endpoint has no next hop: the mark set, to
	// the stack (policy routing forwards it).
	ActionMark = Action(ingressActionACTION_MARK)
	// ActionTTLExceeded: decided, but its TTL or hop limit is 1 or 0: the
	// mark set, to the stack unchanged, which sends ICMP time exceeded.
	ActionTTLExceeded = Action(ingressActionACTION_TTL_EXCEEDED)
	// ActionRedirect: decided and redirected to its endpoint's next hop.
	ActionRedirect = Action(ingressActionACTION_REDIRECT)
	// ActionMartianSource: decided, but from a source the kernel never
	// forwards from (0/8, 127/8, multicast, broadcast; ::, ::1, IPv4-mapped,
	// link-local, multicast): the mark set, to the stack, which drops it.
	ActionMartianSource = Action(ingressActionACTION_MARTIAN_SOURCE)
	// ActionTooBig: decided, but longer than its next hop's MTU (NextHop.MTU;
	// of a GSO skb, a segment longer): the mark set, to the stack
	// unchanged, which sends ICMP fragmentation needed (IPv4 with DF) or
	// packet too big (IPv6), or fragments it (IPv4 without DF).
	ActionTooBig = Action(ingressActionACTION_TOO_BIG)
	// ActionXDPRedirect: decided and redirected to its endpoint's next hop
	// by the XDP program (AttachXDP), the MACs rewritten, before the tc
	// program and the stack.
	ActionXDPRedirect = Action(ingressActionACTION_XDP_REDIRECT)

	numActions = int(ingressActionACTION_COUNT)
)

var actionNames = [numActions]string{"punt", "mark", "ttl-exceeded", "redirect", "martian-source", "too-big", "xdp-redirect"}

// String returns a short lower-case name, usable as a metric label.
func (a Action) String() string {
	if int(a) < numActions {
		return actionNames[a]
	}
	return fmt.Sprintf("action-%d", uint32(a))
}

// Counts are the program's counters, each summed over the CPUs.
type Counts struct {
	// Routes: the packets each route decided (acted on: marked, and
	// redirected or handed to the stack), under the kernel path's labels.
	// They feed sllbrd_route_packets_total and sllbrd_route_bytes_total
	// as the kernel path's route counters do (dataplane.KernelStats adds
	// them to the engine's).
	Routes map[fastpath.RouteLabels]Count
	// Endpoints: the packets decided for each endpoint, per address (so
	// per family), as the kernel path's endpoint counters. They feed
	// sllbrd_endpoint_packets_total and sllbrd_endpoint_bytes_total, and
	// their sum the balanced reason (sllbrd_packets_total), as
	// KernelStats sums the kernel path's.
	Endpoints map[fastpath.EndpointLabels]Count
	// Actions: every packet the programs saw on a link, by what the one
	// that acted on it did (no metric yet): the XDP program counts only
	// what it redirects (ActionXDPRedirect), the tc program the rest.
	Actions [numActions]Count
}

// Counters reads the program's counters. A route's counters start at 0
// when Configure first programs it and are gone after the Configure that
// removes it; an endpoint's likewise (and restart at 0 when its mark
// comes to name another Service, slot or address), as the kernel path's
// counter objects do. It costs one system call per route and endpoint
// address, plus four.
func (d *Datapath) Counters() (Counts, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := Counts{Routes: map[fastpath.RouteLabels]Count{}, Endpoints: map[fastpath.EndpointLabels]Count{}}
	for l, id := range d.routeIDs {
		n, err := sumPerCPU(d.objs.RouteCounters, uint32(id))
		if err != nil {
			return Counts{}, fmt.Errorf("bpfpath: the counters of route %s: %w", l.Route, err)
		}
		c.Routes[l] = n
	}
	for k, l := range d.endpoints {
		n, err := sumPerCPU(d.objs.EndpointCounters, k)
		if err != nil {
			return Counts{}, fmt.Errorf("bpfpath: the counters of endpoint %d of service %s (%s): %w", l.ID, l.Service, l.Addr, err)
		}
		c.Endpoints[l] = n
	}
	for a := range numActions {
		n, err := sumPerCPU(d.objs.ActionCounters, uint32(a))
		if err != nil {
			return Counts{}, fmt.Errorf("bpfpath: the counters of action %v: %w", Action(a), err)
		}
		c.Actions[a] = n
	}
	return c, nil
}

// sumPerCPU sums the per-CPU counts of key in m.
func sumPerCPU(m *ebpf.Map, key any) (Count, error) {
	var vals []ingressCount
	if err := m.Lookup(key, &vals); err != nil {
		return Count{}, err
	}
	var c Count
	for _, v := range vals {
		c.Packets += v.Packets
		c.Bytes += v.Bytes
	}
	return c, nil
}

// zeroPerCPU sets key's counts in m to 0 on every CPU.
func zeroPerCPU(m *ebpf.Map, key any) error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	return m.Put(key, make([]ingressCount, n))
}

// routeCounterIDs gives every route of the input its index in
// route_counters: the one it has, or the lowest free one (held by no route
// programmed now, removed or not). fresh lists those given now (their
// counters must be zeroed before a route set names them); a route beyond
// MaxRoutes gets none.
func (d *Datapath) routeCounterIDs(routes []model.Route) (ids map[fastpath.RouteLabels]uint16, fresh []uint16) {
	ids = map[fastpath.RouteLabels]uint16{}
	used := map[uint16]bool{}
	for _, id := range d.routeIDs {
		used[id] = true
	}
	next := uint16(0)
	for _, r := range routes {
		l := fastpath.RouteLabels{Route: r.Name, Service: r.Service}
		if _, ok := ids[l]; ok {
			continue
		}
		if id, ok := d.routeIDs[l]; ok {
			ids[l] = id
			continue
		}
		for used[next] {
			next++
		}
		if int(next) >= d.maxRoutes {
			continue
		}
		ids[l], used[next] = next, true
		fresh = append(fresh, next)
	}
	return ids, fresh
}

// countRoutes sets the counter of every route in vips (from routes, by
// rank) and turns a route without one (beyond MaxRoutes) into a route
// over the limit, punted at its place; it returns what it punted.
func countRoutes(vips map[netip.Addr]*vipRoutes, routes []model.Route, ids map[fastpath.RouteLabels]uint16, maxRoutes int) []string {
	var punted []string
	for _, v := range vips {
		for i := range v.set.RouteCount {
			rt := &v.set.Routes[i]
			rt.Counter = counterNone
			if rt.Flags&routeOverLimit != 0 || int(rt.Rank) >= len(routes) {
				continue
			}
			r := &routes[rt.Rank]
			id, ok := ids[fastpath.RouteLabels{Route: r.Name, Service: r.Service}]
			if !ok {
				*rt = ingressRoute{Rank: rt.Rank, Protos: rt.Protos, Flags: routeOverLimit, DportCount: rt.DportCount, Dport: rt.Dport, Counter: counterNone}
				if why := fmt.Sprintf("route %s: beyond the %d counted routes (Options.MaxRoutes): to userspace from its place", r.Name, maxRoutes); !slices.Contains(punted, why) {
					punted = append(punted, why)
				}
				continue
			}
			rt.Counter = id
		}
	}
	slices.Sort(punted)
	return punted
}

// endpointCounters is the endpoint counters the input's Services (those
// with an index) have: (table, slot) -> the endpoint's labels, for each
// endpoint's address of each family.
func endpointCounters(services []fastpath.Service, index map[string]uint32) map[ingressSlotKey]fastpath.EndpointLabels {
	out := map[ingressSlotKey]fastpath.EndpointLabels{}
	for _, s := range services {
		i, ok := index[s.Name]
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			for _, fam := range []uint8{4, 6} {
				addr := ep.IPv4
				if fam == 6 {
					addr = ep.IPv6
				}
				if addr.IsValid() && ep.ID >= 0 {
					out[ingressSlotKey{Table: tableKey(i, fam), Slot: uint32(ep.ID)}] = fastpath.EndpointLabels{Service: s.Name, ID: ep.ID, Addr: addr}
				}
			}
		}
	}
	return out
}

// addEndpointCounters adds, zero, the counters of want that are new or
// now count another endpoint.
func (d *Datapath) addEndpointCounters(want map[ingressSlotKey]fastpath.EndpointLabels) error {
	for _, k := range slices.SortedFunc(maps.Keys(want), compareSlotKeys) {
		if old, ok := d.endpoints[k]; ok && old == want[k] {
			continue
		}
		if err := zeroPerCPU(d.objs.EndpointCounters, k); err != nil {
			return fmt.Errorf("adding the counters of endpoint %d of service %s (%s): %w", want[k].ID, want[k].Service, want[k].Addr, err)
		}
		d.endpoints[k] = want[k]
	}
	return nil
}

// removeEndpointCounters deletes the counters want no longer has.
func (d *Datapath) removeEndpointCounters(want map[ingressSlotKey]fastpath.EndpointLabels) error {
	for _, k := range slices.SortedFunc(maps.Keys(d.endpoints), compareSlotKeys) {
		if _, ok := want[k]; ok {
			continue
		}
		if err := d.objs.EndpointCounters.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			l := d.endpoints[k]
			return fmt.Errorf("removing the counters of endpoint %d of service %s (%s): %w", l.ID, l.Service, l.Addr, err)
		}
		delete(d.endpoints, k)
	}
	return nil
}

func compareSlotKeys(a, b ingressSlotKey) int {
	return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Slot, b.Slot))
}
