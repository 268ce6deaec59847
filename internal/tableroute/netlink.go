package tableroute

import (
	"errors"
	"net"
	"net/netip"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// AF is f's AF_INET or AF_INET6.
func AF(f Family) uint8 {
	if f == IPv4 {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// FamilyOfAF is the Family of an AF_ value.
func FamilyOfAF(af uint8) (Family, bool) {
	switch af {
	case unix.AF_INET:
		return IPv4, true
	case unix.AF_INET6:
		return IPv6, true
	}
	return 0, false
}

// IP is a as the slice rtnetlink takes.
func IP(a netip.Addr) net.IP { return net.IP(a.AsSlice()) }

// List returns the default routes (0.0.0.0/0, ::/0) of every table, as
// RouteOf reads them.
func List(rt *rtnetlink.Conn) ([]Route, error) {
	msgs, err := rt.Route.List()
	if err != nil {
		return nil, err // the caller names the step
	}
	var out []Route
	for i := range msgs {
		if r, ok := RouteOf(&msgs[i]); ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// RouteOf reads a route message (a listing's or a notification's): ok is
// false unless it is a default route of IPv4 or IPv6. Hops come sorted. A
// route of another type than unicast or blackhole is read as a blackhole
// with one empty hop: it equals nothing a caller wants, so the caller
// replaces it.
func RouteOf(m *rtnetlink.RouteMessage) (r Route, ok bool) {
	fam, ok := FamilyOfAF(m.Family)
	if !ok || m.DstLength != 0 {
		return Route{}, false
	}
	r = Route{Family: fam, Table: m.Attributes.Table, Metric: m.Attributes.Priority}
	if r.Table == 0 {
		r.Table = uint32(m.Table)
	}
	switch m.Type {
	case unix.RTN_BLACKHOLE:
		r.Blackhole = true
	case unix.RTN_UNICAST:
		r.Hops = hopsOf(m.Attributes)
	default:
		r.Blackhole, r.Hops = true, []Hop{{}}
	}
	SortHops(r.Hops)
	return r, true
}

func hopsOf(a rtnetlink.RouteAttributes) []Hop {
	if len(a.Multipath) == 0 {
		gw, _ := netip.AddrFromSlice(a.Gateway)
		return []Hop{{Gateway: gw.Unmap(), IfIndex: a.OutIface}}
	}
	out := make([]Hop, 0, len(a.Multipath))
	for _, nh := range a.Multipath {
		gw, _ := netip.AddrFromSlice(nh.Gateway)
		out = append(out, Hop{Gateway: gw.Unmap(), IfIndex: nh.Hop.IfIndex})
	}
	return out
}

// replaceMessage is r as an RTM_NEWROUTE body written with protocol.
func replaceMessage(r Route, protocol uint8) *rtnetlink.RouteMessage {
	m := &rtnetlink.RouteMessage{Family: AF(r.Family), Protocol: protocol, Scope: unix.RT_SCOPE_UNIVERSE,
		Type: unix.RTN_UNICAST, Attributes: rtnetlink.RouteAttributes{Table: r.Table, Priority: r.Metric}}
	if r.Table < 256 {
		m.Table = uint8(r.Table)
	}
	switch {
	case r.Blackhole:
		m.Type = unix.RTN_BLACKHOLE
	case len(r.Hops) == 1:
		m.Attributes.Gateway = IP(r.Hops[0].Gateway)
		m.Attributes.OutIface = r.Hops[0].IfIndex
	default:
		for _, h := range r.Hops {
			m.Attributes.Multipath = append(m.Attributes.Multipath, rtnetlink.NextHop{
				Hop: rtnetlink.RTNextHop{IfIndex: h.IfIndex}, Gateway: IP(h.Gateway)})
		}
	}
	return m
}

// Replace writes r, marked with routing protocol protocol, in one
// RTM_NEWROUTE with NLM_F_CREATE|NLM_F_REPLACE carrying every next hop
// (RTA_GATEWAY for one, RTA_MULTIPATH for several), in both families, so
// the table always has a route at r's key; never a delete and an add.
//
// IPv4 swaps the route whole. IPv6 keeps one kernel route per next hop (ECMP
// siblings) and, for a message with RTA_MULTIPATH, inserts them one at a
// time (net/ipv6/route.c, ip6_route_multipath_add): the first with
// NLM_F_REPLACE replaces the route at the key together with all its siblings
// (ip6_fib.c, fib6_add_rt2node: "Replacing an ECMP route, remove all
// siblings"), each further one is appended as a sibling. A lookup meanwhile
// finds the new route with the hops inserted so far, never none; one
// RTM_NEWROUTE notification announces the whole set at the end, no
// RTM_DELROUTE. The siblings are replaced correctly since the 2015 kernel
// commit 27596472473a ("ipv6: fix ECMP route replacement"; before it the old
// siblings stayed linked). dataplane/route's TestIntegrationReplaceHopSets
// checks every transition between one and several hops, in both families,
// on the running kernel. If a later hop fails, the kernel removes the hops
// it inserted: the key has no route (the blackhole below it drops) and the
// error is returned, for the caller to retry.
func Replace(rt *rtnetlink.Conn, r Route, protocol uint8) error {
	return rt.Route.Replace(replaceMessage(r, protocol))
}

// deleteMessage selects the route by its key only (family, table, default
// destination, metric): any protocol, scope, type and next hops.
func deleteMessage(r Route) *rtnetlink.RouteMessage {
	m := &rtnetlink.RouteMessage{Family: AF(r.Family), Scope: unix.RT_SCOPE_NOWHERE,
		Attributes: rtnetlink.RouteAttributes{Table: r.Table, Priority: r.Metric}}
	if r.Table < 256 {
		m.Table = uint8(r.Table)
	}
	return m
}

// Delete removes the route at r's key, whoever wrote it.
func Delete(rt *rtnetlink.Conn, r Route) error { return rt.Route.Delete(deleteMessage(r)) }

// DeleteNeighbour removes addr's neighbour entry on interface ifIndex
// (RTM_DELNEIGH); an absent entry is not an error.
func DeleteNeighbour(rt *rtnetlink.Conn, ifIndex uint32, addr netip.Addr) error {
	addr = addr.Unmap()
	m := &rtnetlink.NeighMessage{Family: uint16(AF(FamilyOf(addr))), Index: ifIndex,
		Attributes: &rtnetlink.NeighAttributes{Address: IP(addr), IfIndex: ifIndex}}
	_, err := rt.Execute(m, unix.RTM_DELNEIGH, netlink.Request|netlink.Acknowledge)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}
