package targetnet

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// The numbers that mark what this package creates (docs/target.md).
const (
	// TableMin and TableMax bound the routing tables of Gateways: every
	// route in them is ours. The controller hands them out per pod.
	TableMin = 50000
	TableMax = 50999
	// RulePriority is the priority of every "from VIP lookup TABLE" rule.
	RulePriority = 10200
	// DropRulePriority is that of every "from VIP blackhole" rule behind
	// it. TABLE ends in a blackhole route, so the rule is not reached in
	// steady state; it is when an IPv6 lookup racing a route replacement
	// misses the whole table for an instant (a kernel race, reproduced
	// with `ip -6 -batch` replacements alone), which would otherwise let
	// the main table (the pod network) route a VIP's reply.
	DropRulePriority = RulePriority + 1
	// Protocol is the IFA_PROTO of our VIP addresses and the protocol of
	// our rules and routes: an address is ours only if it carries it.
	Protocol = 83
	// NextHopMetric is the metric of the default route over the SLLBR
	// pods; BlackholeMetric that of the blackhole default behind it.
	NextHopMetric   = 100
	BlackholeMetric = 1_000_000
	// MaxNextHops bounds the next hops of one family of one Gateway.
	MaxNextHops = 256
	// MaxVIPs bounds the VIPs of one Gateway.
	MaxVIPs = 1024
	// Loopback is the interface that holds the VIPs.
	Loopback = "lo"
)

// Family is an address family (tableroute's, shared with the SLLBR side).
type Family = tableroute.Family

// The address families.
const (
	IPv4 = tableroute.IPv4
	IPv6 = tableroute.IPv6
)

// Families lists both families, IPv4 first.
var Families = tableroute.Families

// Gateway is what one Gateway wants in the pod: its VIPs on lo, and
// VIP-sourced traffic routed over NextHops (the Gateway's SLLBR pods)
// through Table, on the interface that holds an address in Subnets.
type Gateway struct {
	Name     string
	Table    uint32
	Subnets  []netip.Prefix
	VIPs     []netip.Prefix // host prefixes: /32 or /128
	NextHops []netip.Addr   // both families
	// Down are next hops found down (their BFD session with the pod,
	// internal/targetbfd): left out of the route while another next hop of
	// their family is not down; when every one of a family is down, all
	// stay (GatewayResult.AllDown). Addresses that are not next hops are
	// ignored.
	Down []netip.Addr
}

// Desired is the whole network configuration the pod must have. An empty
// Desired removes everything of ours.
type Desired struct {
	Gateways []Gateway
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid target network configuration")

// Validate checks d as a whole: a Desired that fails is not applied at all.
func (d Desired) Validate() error {
	names, tables, vips := map[string]bool{}, map[uint32]bool{}, map[netip.Prefix]string{}
	var errs []error
	for _, g := range d.Gateways {
		if err := g.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if names[g.Name] {
			errs = append(errs, fmt.Errorf("%w: gateway %q listed twice", ErrInvalid, g.Name))
		}
		if tables[g.Table] {
			errs = append(errs, fmt.Errorf("%w: gateway %q: table %d used by another gateway", ErrInvalid, g.Name, g.Table))
		}
		names[g.Name], tables[g.Table] = true, true
		for _, v := range g.VIPs {
			if other, dup := vips[v]; dup {
				errs = append(errs, fmt.Errorf("%w: VIP %s in gateways %q and %q", ErrInvalid, v, other, g.Name))
			}
			vips[v] = g.Name
		}
	}
	return errors.Join(errs...)
}

func (g Gateway) validate() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: gateway %q: %s", ErrInvalid, g.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case g.Name == "":
		return fail("no name")
	case g.Table < TableMin || g.Table > TableMax:
		return fail("table %d outside %d-%d", g.Table, TableMin, TableMax)
	case len(g.VIPs) > MaxVIPs:
		return fail("%d VIPs, at most %d", len(g.VIPs), MaxVIPs)
	}
	for _, s := range g.Subnets {
		if !s.IsValid() || s != s.Masked() || s.Addr().Is4In6() {
			return fail("subnet %q is not a network prefix", s)
		}
	}
	for _, v := range g.VIPs {
		if !v.IsValid() || v.Bits() != v.Addr().BitLen() || v.Addr().Is4In6() || v.Addr().IsUnspecified() ||
			v.Addr().IsLoopback() || v.Addr().IsMulticast() || v.Addr().Zone() != "" {
			return fail("VIP %q is not a unicast host prefix (/32 or /128)", v)
		}
	}
	count := map[Family]int{}
	for _, h := range g.NextHops {
		if !h.IsValid() || h.Is4In6() || h.IsUnspecified() || h.IsMulticast() || h.Zone() != "" {
			return fail("next hop %q is not a unicast address", h)
		}
		if !slices.ContainsFunc(g.Subnets, func(s netip.Prefix) bool { return s.Contains(h) }) {
			return fail("next hop %s is in none of the subnets %v", h, g.Subnets)
		}
		if count[tableroute.FamilyOf(h)]++; count[tableroute.FamilyOf(h)] > MaxNextHops {
			return fail("more than %d %s next hops", MaxNextHops, tableroute.FamilyOf(h))
		}
	}
	for _, h := range g.Down {
		if !h.IsValid() || h.Zone() != "" {
			return fail("down next hop %q is not an address", h)
		}
	}
	return nil
}

// vipsOf returns g's VIPs of family f.
func (g Gateway) vipsOf(f Family) []netip.Prefix { return ofFamily(g.VIPs, f, netip.Prefix.Addr) }

// subnetsOf returns g's subnets of family f.
func (g Gateway) subnetsOf(f Family) []netip.Prefix { return ofFamily(g.Subnets, f, netip.Prefix.Addr) }

// nextHopsOf returns g's next hops of family f, sorted, without duplicates.
func (g Gateway) nextHopsOf(f Family) []netip.Addr {
	out := ofFamily(g.NextHops, f, func(a netip.Addr) netip.Addr { return a })
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// ofFamily returns the items of s whose address is of family f.
func ofFamily[T any](s []T, f Family, addr func(T) netip.Addr) []T {
	var out []T
	for _, v := range s {
		if tableroute.FamilyOf(addr(v)) == f {
			out = append(out, v)
		}
	}
	return out
}
