package targetnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// NetlinkKernel implements Kernel with rtnetlink in one network namespace.
type NetlinkKernel struct {
	rt  *rtnetlink.Conn
	raw *netlink.Conn // addresses (IFA_PROTO) and neighbours
}

var _ Kernel = (*NetlinkKernel)(nil)

// NewNetlinkKernel opens rtnetlink sockets in the network namespace netnsFD
// (0: the caller's, as in a pod).
func NewNetlinkKernel(netnsFD int) (*NetlinkKernel, error) {
	cfg := &netlink.Config{NetNS: netnsFD}
	rt, err := rtnetlink.Dial(cfg)
	if err != nil {
		return nil, fmt.Errorf("dial rtnetlink: %w", err)
	}
	raw, err := netlink.Dial(unix.NETLINK_ROUTE, cfg)
	if err != nil {
		rt.Close()
		return nil, fmt.Errorf("dial netlink route: %w", err)
	}
	return &NetlinkKernel{rt: rt, raw: raw}, nil
}

// Close closes the sockets.
func (k *NetlinkKernel) Close() error { return errors.Join(k.rt.Close(), k.raw.Close()) }

// Links implements Kernel.
func (k *NetlinkKernel) Links() ([]Link, error) {
	msgs, err := k.rt.Link.List()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	out := make([]Link, 0, len(msgs))
	for _, m := range msgs {
		if m.Attributes != nil {
			out = append(out, Link{Index: m.Index, Name: m.Attributes.Name})
		}
	}
	return out, nil
}

func af(f Family) uint8 {
	if f == IPv4 {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

func familyOfAF(a uint8) (Family, bool) {
	switch a {
	case unix.AF_INET:
		return IPv4, true
	case unix.AF_INET6:
		return IPv6, true
	}
	return 0, false
}

func ip(a netip.Addr) net.IP { return net.IP(a.AsSlice()) }

// Rules implements Kernel.
func (k *NetlinkKernel) Rules() ([]Rule, error) {
	msgs, err := k.rt.Rule.List()
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	var out []Rule
	for _, m := range msgs {
		fam, ok := familyOfAF(m.Family)
		if !ok || m.Attributes == nil {
			continue
		}
		a := m.Attributes
		r := Rule{Family: fam, Table: uint32(m.Table)}
		if a.Priority != nil {
			r.Priority = *a.Priority
		}
		if a.Table != nil {
			r.Table = *a.Table
		}
		if a.Protocol != nil {
			r.Protocol = *a.Protocol
		}
		if a.Src != nil {
			if addr, ok := netip.AddrFromSlice(*a.Src); ok {
				r.Src = netip.PrefixFrom(addr.Unmap(), int(m.SrcLength))
			}
		}
		r.Blackhole = m.Action == unix.FR_ACT_BLACKHOLE
		if r.Blackhole {
			r.Table = 0 // the kernel reports the main table for actions without one
		}
		r.Plain = (m.Action == unix.FR_ACT_TO_TBL || r.Blackhole) && m.DstLength == 0 && m.TOS == 0 && m.Flags&unix.FIB_RULE_INVERT == 0 &&
			a.FwMark == nil && a.IIFName == nil && a.OIFName == nil && a.IPProto == nil && a.SPortRange == nil &&
			a.DPortRange == nil && a.UIDRange == nil && a.Goto == nil && (a.SuppressPrefixLen == nil || *a.SuppressPrefixLen == 0xffffffff) &&
			(a.SuppressIFGroup == nil || *a.SuppressIFGroup == 0xffffffff) && (a.L3MDev == nil || *a.L3MDev == 0)
		out = append(out, r)
	}
	return out, nil
}

func ruleMessage(r Rule) *rtnetlink.RuleMessage {
	prio, table, proto := r.Priority, r.Table, r.Protocol
	m := &rtnetlink.RuleMessage{Family: af(r.Family), Action: unix.FR_ACT_TO_TBL,
		Attributes: &rtnetlink.RuleAttributes{Priority: &prio, Table: &table, Protocol: &proto}}
	if r.Blackhole {
		m.Action, m.Attributes.Table = unix.FR_ACT_BLACKHOLE, nil
	} else if table < 256 {
		m.Table = uint8(table)
	}
	if r.Src.IsValid() {
		src := ip(r.Src.Addr())
		m.SrcLength = uint8(r.Src.Bits())
		m.Attributes.Src = &src
	}
	return m
}

// AddRule implements Kernel.
func (k *NetlinkKernel) AddRule(r Rule) error { return k.rt.Rule.Add(ruleMessage(r)) }

// DeleteRule implements Kernel.
func (k *NetlinkKernel) DeleteRule(r Rule) error { return k.rt.Rule.Delete(ruleMessage(r)) }

// Routes implements Kernel.
func (k *NetlinkKernel) Routes() ([]Route, error) {
	msgs, err := k.rt.Route.List()
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	var out []Route
	for _, m := range msgs {
		fam, ok := familyOfAF(m.Family)
		if !ok || m.DstLength != 0 {
			continue
		}
		r := Route{Family: fam, Table: m.Attributes.Table, Metric: m.Attributes.Priority}
		if r.Table == 0 {
			r.Table = uint32(m.Table)
		}
		switch m.Type {
		case unix.RTN_BLACKHOLE:
			r.Blackhole = true
		case unix.RTN_UNICAST:
			r.Hops = hops(m.Attributes)
		default: // neither of our kinds: differs from anything we want
			r.Blackhole, r.Hops = true, []Hop{{}}
		}
		sortHops(r.Hops)
		out = append(out, r)
	}
	return out, nil
}

func hops(a rtnetlink.RouteAttributes) []Hop {
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

// ReplaceRoute implements Kernel: one RTM_NEWROUTE with NLM_F_REPLACE,
// carrying every next hop (RTA_MULTIPATH), in both families.
func (k *NetlinkKernel) ReplaceRoute(r Route) error {
	m := &rtnetlink.RouteMessage{Family: af(r.Family), Protocol: Protocol, Scope: unix.RT_SCOPE_UNIVERSE,
		Type: unix.RTN_UNICAST, Attributes: rtnetlink.RouteAttributes{Table: r.Table, Priority: r.Metric}}
	if r.Table < 256 {
		m.Table = uint8(r.Table)
	}
	switch {
	case r.Blackhole:
		m.Type = unix.RTN_BLACKHOLE
	case len(r.Hops) == 1:
		m.Attributes.Gateway = ip(r.Hops[0].Gateway)
		m.Attributes.OutIface = r.Hops[0].IfIndex
	default:
		for _, h := range r.Hops {
			m.Attributes.Multipath = append(m.Attributes.Multipath, rtnetlink.NextHop{
				Hop: rtnetlink.RTNextHop{IfIndex: h.IfIndex}, Gateway: ip(h.Gateway)})
		}
	}
	return k.rt.Route.Replace(m)
}

// DeleteRoute implements Kernel: the route is selected by its key only.
func (k *NetlinkKernel) DeleteRoute(r Route) error {
	m := &rtnetlink.RouteMessage{Family: af(r.Family), Scope: unix.RT_SCOPE_NOWHERE,
		Attributes: rtnetlink.RouteAttributes{Table: r.Table, Priority: r.Metric}}
	if r.Table < 256 {
		m.Table = uint8(r.Table)
	}
	return k.rt.Route.Delete(m)
}
