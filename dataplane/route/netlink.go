package route

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// NetlinkKernel implements Kernel and ChangeWatcher with rtnetlink.
type NetlinkKernel struct {
	rt    *rtnetlink.Conn
	watch *watcher
}

var (
	_ Kernel        = (*NetlinkKernel)(nil)
	_ ChangeWatcher = (*NetlinkKernel)(nil)
)

// NewNetlinkKernel opens an rtnetlink socket in the network namespace
// netnsFD (0: the caller's), and another that is subscribed to the
// notifications of rules, routes, links and addresses there (for
// ChangedElsewhere).
func NewNetlinkKernel(netnsFD int) (*NetlinkKernel, error) {
	rt, err := rtnetlink.Dial(&netlink.Config{NetNS: netnsFD})
	if err != nil {
		return nil, fmt.Errorf("dial rtnetlink: %w", err)
	}
	self, err := portID(rt)
	if err == nil {
		var w *watcher
		if w, err = dialWatcher(netnsFD, self); err == nil {
			return &NetlinkKernel{rt: rt, watch: w}, nil
		}
	}
	rt.Close()
	return nil, err
}

// Close closes the sockets.
func (k *NetlinkKernel) Close() error { return errors.Join(k.watch.Close(), k.rt.Close()) }

// ChangedElsewhere implements ChangeWatcher: it reads the notifications
// received since the previous call, and reports true when one of them
// was not caused by this NetlinkKernel's own requests, or when some were
// lost or could not be read.
func (k *NetlinkKernel) ChangedElsewhere() bool { return k.watch.changedElsewhere() }

// LinkIndex implements Kernel.
func (k *NetlinkKernel) LinkIndex(name string) (uint32, error) {
	links, err := k.rt.Link.List()
	if err != nil {
		return 0, fmt.Errorf("list links: %w", err)
	}
	for _, l := range links {
		if l.Attributes != nil && l.Attributes.Name == name {
			return l.Index, nil
		}
	}
	return 0, fmt.Errorf("no such interface")
}

// Rules implements Kernel; rules with actions other than "lookup",
// "blackhole" and "goto", with selectors we do not use, or inverted
// (other than a goto), are returned with a zero Table and Goto and
// Blackhole unset, so they are never mistaken for ours. A goto whose
// target priority has no rule (the kernel flags it unresolved and skips
// it) is listed as any other.
func (k *NetlinkKernel) Rules() ([]Rule, error) {
	msgs, err := k.rt.Rule.List()
	if err != nil {
		return nil, err
	}
	var out []Rule
	for _, m := range msgs {
		if r, ok := ruleFromMessage(m); ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func ruleFromMessage(m rtnetlink.RuleMessage) (Rule, bool) {
	a := m.Attributes
	if a == nil || (m.Family != unix.AF_INET && m.Family != unix.AF_INET6) {
		return Rule{}, false
	}
	r := Rule{Family: IPv4, Table: uint32(m.Table), Blackhole: m.Action == unix.FR_ACT_BLACKHOLE,
		Invert: m.Flags&unix.FIB_RULE_INVERT != 0}
	if m.Family == unix.AF_INET6 {
		r.Family = IPv6
	}
	if a.Priority != nil {
		r.Priority = *a.Priority
	}
	if a.Table != nil {
		r.Table = *a.Table
	}
	if m.Action == unix.FR_ACT_GOTO && a.Goto != nil {
		r.Goto = *a.Goto
	}
	if a.FwMark != nil {
		r.Mark, r.Mask = *a.FwMark, exactMask
		if a.FwMask != nil {
			r.Mask = *a.FwMask
		}
	}
	if a.Src != nil {
		if ip, ok := netip.AddrFromSlice(*a.Src); ok {
			r.Src = netip.PrefixFrom(ip.Unmap(), int(m.SrcLength))
		}
	}
	action := m.Action == unix.FR_ACT_TO_TBL || m.Action == unix.FR_ACT_BLACKHOLE || r.Goto != 0
	foreign := !action || r.Invert && r.Goto == 0 || m.DstLength != 0 || m.TOS != 0 ||
		a.IIFName != nil || a.OIFName != nil ||
		a.IPProto != nil || a.SPortRange != nil || a.DPortRange != nil || a.UIDRange != nil ||
		a.SuppressPrefixLen != nil && *a.SuppressPrefixLen != 0xffffffff
	if foreign {
		r.Table, r.Blackhole, r.Goto, r.Invert = 0, false, 0, false
	}
	return r, true
}

func ruleMessage(r Rule) *rtnetlink.RuleMessage {
	prio := r.Priority
	m := &rtnetlink.RuleMessage{Family: tableroute.AF(r.Family), Action: unix.FR_ACT_TO_TBL,
		Attributes: &rtnetlink.RuleAttributes{Priority: &prio}}
	switch {
	case r.Blackhole:
		m.Action = unix.FR_ACT_BLACKHOLE
	case r.Goto != 0:
		target := r.Goto
		m.Action, m.Attributes.Goto = unix.FR_ACT_GOTO, &target
	default:
		table := r.Table
		m.Attributes.Table = &table
		if table < 256 {
			m.Table = uint8(table)
		}
	}
	if r.Invert {
		m.Flags |= unix.FIB_RULE_INVERT
	}
	if r.Mark != 0 {
		mark, mask := r.Mark, r.Mask
		m.Attributes.FwMark, m.Attributes.FwMask = &mark, &mask
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
