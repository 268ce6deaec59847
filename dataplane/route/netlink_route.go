package route

import (
	"encoding/binary"
	"errors"
	"net/netip"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Routes implements Kernel.
func (k *NetlinkKernel) Routes() ([]Route, error) {
	msgs, err := k.rt.Route.List()
	if err != nil {
		return nil, err
	}
	var out []Route
	for _, m := range msgs {
		if m.DstLength != 0 || (m.Family != unix.AF_INET && m.Family != unix.AF_INET6) {
			continue
		}
		r := Route{Family: IPv4, Table: m.Attributes.Table, Metric: m.Attributes.Priority}
		if m.Family == unix.AF_INET6 {
			r.Family = IPv6
		}
		if r.Table == 0 {
			r.Table = uint32(m.Table)
		}
		switch m.Type {
		case unix.RTN_BLACKHOLE:
			r.Blackhole = true
		case unix.RTN_UNICAST:
			r.Hops = hopsOf(m.Attributes)
		default:
			r.Blackhole, r.Hops = true, []Hop{{}} // neither of our kinds: differs from anything we want
		}
		out = append(out, r)
	}
	return out, nil
}

func hopsOf(a rtnetlink.RouteAttributes) []Hop {
	if len(a.Multipath) == 0 {
		gw, _ := netip.AddrFromSlice(a.Gateway)
		return []Hop{{Gateway: gw.Unmap(), IfIndex: a.OutIface}}
	}
	var hops []Hop
	for _, nh := range a.Multipath {
		gw, _ := netip.AddrFromSlice(nh.Gateway)
		hops = append(hops, Hop{Gateway: gw.Unmap(), IfIndex: nh.Hop.IfIndex})
	}
	return hops
}

func routeMessage(r Route) *rtnetlink.RouteMessage {
	m := &rtnetlink.RouteMessage{Family: afOf(r.Family), Protocol: unix.RTPROT_STATIC,
		Scope: unix.RT_SCOPE_UNIVERSE, Type: unix.RTN_UNICAST,
		Attributes: rtnetlink.RouteAttributes{Table: r.Table, Priority: r.Metric}}
	if r.Table < 256 {
		m.Table = uint8(r.Table)
	}
	switch {
	case r.Blackhole:
		m.Type = unix.RTN_BLACKHOLE
	case len(r.Hops) == 1:
		m.Attributes.Gateway = ipOf(r.Hops[0].Gateway)
		m.Attributes.OutIface = r.Hops[0].IfIndex
	default:
		for _, h := range r.Hops {
			m.Attributes.Multipath = append(m.Attributes.Multipath, rtnetlink.NextHop{
				Hop: rtnetlink.RTNextHop{IfIndex: h.IfIndex}, Gateway: ipOf(h.Gateway)})
		}
	}
	return m
}

// ReplaceRoute implements Kernel: one RTM_NEWROUTE with NLM_F_CREATE|
// NLM_F_REPLACE carrying every next hop (RTA_GATEWAY for one, RTA_MULTIPATH
// for several), in both families, so the table always has a route at the
// key; never a delete and an add.
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
// siblings stayed linked). TestIntegrationReplaceHopSets checks every
// transition between one and several hops, in both families, on the running
// kernel. If a later hop fails, the kernel removes the hops it inserted: the
// key has no route (the blackhole below it drops) and the error is returned,
// for the next Add to retry.
func (k *NetlinkKernel) ReplaceRoute(r Route) error {
	return k.rt.Route.Replace(routeMessage(r))
}

// DeleteRoute implements Kernel.
func (k *NetlinkKernel) DeleteRoute(r Route) error { return k.rt.Route.Delete(deleteMessage(r)) }

// deleteMessage selects the route by its key only (family, table, default
// destination, metric): any protocol, scope, type and next hops, so routes
// written by others in our tables are removed too.
func deleteMessage(r Route) *rtnetlink.RouteMessage {
	m := &rtnetlink.RouteMessage{Family: afOf(r.Family), Scope: unix.RT_SCOPE_NOWHERE,
		Attributes: rtnetlink.RouteAttributes{Table: r.Table, Priority: r.Metric}}
	if r.Table < 256 {
		m.Table = uint8(r.Table)
	}
	return m
}

// DeleteNeighbour implements Kernel (RTM_DELNEIGH with ndmsg + NDA_DST).
func (k *NetlinkKernel) DeleteNeighbour(ifIndex uint32, addr netip.Addr) error {
	addr = addr.Unmap()
	ndm := make([]byte, unix.SizeofNdMsg)
	ndm[0] = afOf(familyOf(addr))
	binary.NativeEndian.PutUint32(ndm[4:8], ifIndex)
	attrs, err := netlink.MarshalAttributes([]netlink.Attribute{{Type: unix.NDA_DST, Data: addr.AsSlice()}})
	if err != nil {
		return err
	}
	_, err = k.neigh.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_DELNEIGH, Flags: netlink.Request | netlink.Acknowledge},
		Data:   append(ndm, attrs...),
	})
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}
