package targetnet

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// NetlinkKernel implements Kernel with rtnetlink in one network namespace.
type NetlinkKernel struct {
	rt  *rtnetlink.Conn
	raw *netlink.Conn // addresses (IFA_PROTO) and neighbours
}

var _ Kernel = (*NetlinkKernel)(nil)

// NewNetlinkKernel opens rtnetlink sockets in the network namespace netnsFD
// (0: the caller's, as in a pod) and checks that the kernel keeps
// IFA_PROTO (ProbeAddressProtocol): it fails on a kernel that does not.
func NewNetlinkKernel(netnsFD int) (*NetlinkKernel, error) {
	k, err := DialNetlinkKernel(netnsFD)
	if err != nil {
		return nil, err
	}
	if err := ProbeAddressProtocol(k); err != nil {
		_ = k.Close()
		return nil, err
	}
	return k, nil
}

// DialNetlinkKernel is NewNetlinkKernel without the IFA_PROTO probe, for a
// caller that probed this kernel once already (the property belongs to the
// kernel, not to a namespace): the node daemon opens a pod's namespace for
// every apply, and a probe each time would add and remove an address in
// every pod at every resync.
func DialNetlinkKernel(netnsFD int) (*NetlinkKernel, error) {
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

// Rules implements Kernel.
func (k *NetlinkKernel) Rules() ([]Rule, error) {
	msgs, err := k.rt.Rule.List()
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	var out []Rule
	for _, m := range msgs {
		fam, ok := tableroute.FamilyOfAF(m.Family)
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
	m := &rtnetlink.RuleMessage{Family: tableroute.AF(r.Family), Action: unix.FR_ACT_TO_TBL,
		Attributes: &rtnetlink.RuleAttributes{Priority: &prio, Table: &table, Protocol: &proto}}
	if r.Blackhole {
		m.Action, m.Attributes.Table = unix.FR_ACT_BLACKHOLE, nil
	} else if table < 256 {
		m.Table = uint8(table)
	}
	if r.Src.IsValid() {
		src := tableroute.IP(r.Src.Addr())
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
	routes, err := tableroute.List(k.rt)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	return routes, nil
}

// ReplaceRoute implements Kernel: one RTM_NEWROUTE with NLM_F_REPLACE,
// carrying every next hop, written with our Protocol.
func (k *NetlinkKernel) ReplaceRoute(r Route) error { return tableroute.Replace(k.rt, r, Protocol) }

// DeleteRoute implements Kernel: the route is selected by its key only.
func (k *NetlinkKernel) DeleteRoute(r Route) error { return tableroute.Delete(k.rt, r) }
