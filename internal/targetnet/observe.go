package targetnet

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// observed is one reading of the kernel, split into ours and foreign.
type observed struct {
	links    map[uint32]string // index -> name
	lo       uint32
	addrs    []Address                // every address
	ourAddrs map[Address]bool         // addresses carrying Protocol
	rules    []Rule                   // every rule
	ourRules map[Rule]bool            // rules of ours (see ownsRule)
	routes   map[tableroute.Key]Route // routes in our tables
}

// ownsRule reports whether r is ours, with our protocol: plain "from
// PREFIX lookup TABLE" at RulePriority into one of our tables, or plain
// "from PREFIX blackhole" at DropRulePriority.
func ownsRule(r Rule) bool {
	if !r.Plain || r.Protocol != Protocol || !r.Src.IsValid() {
		return false
	}
	if r.Blackhole {
		return r.Priority == DropRulePriority
	}
	return r.Priority == RulePriority && ownsTable(r.Table)
}

func ownsTable(t uint32) bool { return TableMin <= t && t <= TableMax }

func (a *Applier) observe() (observed, error) {
	o := observed{links: map[uint32]string{}, ourAddrs: map[Address]bool{}, ourRules: map[Rule]bool{}, routes: map[tableroute.Key]Route{}}
	links, err := a.kernel.Links()
	if err != nil {
		return o, err
	}
	for _, l := range links {
		o.links[l.Index] = l.Name
		if l.Name == Loopback {
			o.lo = l.Index
		}
	}
	if o.lo == 0 {
		return o, fmt.Errorf("no interface %s", Loopback)
	}
	if o.addrs, err = a.kernel.Addresses(); err != nil {
		return o, err
	}
	for _, ad := range o.addrs {
		if ad.Protocol == Protocol {
			o.ourAddrs[ad] = true
		}
	}
	if o.rules, err = a.kernel.Rules(); err != nil {
		return o, err
	}
	for _, r := range o.rules {
		if ownsRule(r) {
			o.ourRules[r] = true
		}
	}
	routes, err := a.kernel.Routes()
	if err != nil {
		return o, err
	}
	for _, r := range routes {
		if ownsTable(r.Table) {
			o.routes[r.Key()] = r
		}
	}
	return o, nil
}

// foreignAddress returns an address that is not ours and holds addr.
func (o observed) foreignAddress(addr netip.Addr) (Address, bool) {
	for _, a := range o.addrs {
		if a.Protocol != Protocol && a.Prefix.Addr() == addr {
			return a, true
		}
	}
	return Address{}, false
}

// local reports whether addr is an address of the namespace.
func (o observed) local(addr netip.Addr) bool {
	return slices.ContainsFunc(o.addrs, func(a Address) bool { return a.Prefix.Addr() == addr })
}

// interfaceFor returns the interface (lowest index) holding an address,
// not ours, inside one of subnets.
func (o observed) interfaceFor(subnets []netip.Prefix) (uint32, bool) {
	var best uint32
	for _, a := range o.addrs {
		if a.Protocol == Protocol || a.LinkIndex == o.lo {
			continue
		}
		if slices.ContainsFunc(subnets, func(s netip.Prefix) bool { return s.Contains(a.Prefix.Addr()) }) &&
			(best == 0 || a.LinkIndex < best) {
			best = a.LinkIndex
		}
	}
	return best, best != 0
}

// ourRule is the rule of a VIP in table.
func ourRule(vip netip.Prefix, table uint32) Rule {
	return Rule{Family: tableroute.FamilyOf(vip.Addr()), Priority: RulePriority, Src: vip, Table: table, Protocol: Protocol, Plain: true}
}

// dropRule is the blackhole rule behind a VIP's rule (DropRulePriority).
func dropRule(vip netip.Prefix) Rule {
	return Rule{Family: tableroute.FamilyOf(vip.Addr()), Priority: DropRulePriority, Src: vip, Blackhole: true, Protocol: Protocol, Plain: true}
}
