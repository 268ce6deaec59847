package tableroute

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Family is an address family: 4 or 6.
type Family uint8

// The address families.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// Families lists both, IPv4 first.
var Families = []Family{IPv4, IPv6}

// FamilyOf is the family of a (an IPv4-mapped IPv6 address is IPv4).
func FamilyOf(a netip.Addr) Family {
	if a.Unmap().Is4() {
		return IPv4
	}
	return IPv6
}

func (f Family) String() string { return fmt.Sprintf("ipv%d", uint8(f)) }

// Hop is one next hop of a route.
type Hop struct {
	Gateway netip.Addr
	IfIndex uint32
}

// Route is the default route (0.0.0.0/0 or ::/0) of one table: a
// blackhole, or unicast over Hops (one, or several for ECMP).
type Route struct {
	Family    Family
	Table     uint32
	Metric    uint32
	Blackhole bool
	Hops      []Hop // sorted by SortHops
}

// Key identifies a route in the kernel: what a replace overwrites and a
// delete selects.
type Key struct {
	Family Family
	Table  uint32
	Metric uint32
}

// Key returns r's key.
func (r Route) Key() Key { return Key{r.Family, r.Table, r.Metric} }

// Equal reports whether r and o are the same route (hops sorted alike).
func (r Route) Equal(o Route) bool {
	return r.Key() == o.Key() && r.Blackhole == o.Blackhole && slices.Equal(r.Hops, o.Hops)
}

func (r Route) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "route %s table %d default metric %d", r.Family, r.Table, r.Metric)
	if r.Blackhole {
		b.WriteString(" blackhole")
	}
	for _, h := range r.Hops {
		fmt.Fprintf(&b, " via %s ifindex %d", h.Gateway, h.IfIndex)
	}
	return b.String()
}

// SortHops sorts h by gateway, then interface: the order Route.Hops is
// compared in.
func SortHops(h []Hop) {
	slices.SortFunc(h, func(a, b Hop) int {
		if c := a.Gateway.Compare(b.Gateway); c != 0 {
			return c
		}
		return int(a.IfIndex) - int(b.IfIndex)
	})
}
