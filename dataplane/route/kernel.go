package route

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

func familyOf(a netip.Addr) Family {
	if a.Unmap().Is4() {
		return IPv4
	}
	return IPv6
}

// Rule is a policy routing rule as this package sees it: packets matching
// Mark/Mask (when Mark is non-zero) and Src (when valid) look up Table, or
// are dropped when Blackhole is set (action blackhole, Table 0).
type Rule struct {
	Family    Family
	Priority  uint32
	Mark      uint32
	Mask      uint32 // with Mark; 0xffffffff for one mark
	Src       netip.Prefix
	Table     uint32
	Blackhole bool
}

// exactMask selects one fwmark.
const exactMask = 0xffffffff

func (r Rule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rule v%d pref %d", r.Family, r.Priority)
	if r.Mark != 0 {
		fmt.Fprintf(&b, " fwmark %#x", r.Mark)
		if r.Mask != exactMask {
			fmt.Fprintf(&b, "/%#x", r.Mask)
		}
	}
	if r.Src.IsValid() {
		fmt.Fprintf(&b, " from %s", r.Src)
	}
	if r.Blackhole {
		b.WriteString(" blackhole")
	} else {
		fmt.Fprintf(&b, " lookup %d", r.Table)
	}
	return b.String()
}

// Hop is one next hop of a route.
type Hop struct {
	Gateway netip.Addr
	IfIndex uint32
}

// Route is a default route in one of our tables: a blackhole, or unicast
// over Hops (one, or several for ECMP).
type Route struct {
	Family    Family
	Table     uint32
	Metric    uint32
	Blackhole bool
	Hops      []Hop // sorted by gateway, then interface
}

// key identifies the route in the kernel (what a replace overwrites).
type routeKey struct {
	Family Family
	Table  uint32
	Metric uint32
}

func (r Route) key() routeKey { return routeKey{r.Family, r.Table, r.Metric} }

func (r Route) equal(o Route) bool {
	return r.key() == o.key() && r.Blackhole == o.Blackhole && slices.Equal(r.Hops, o.Hops)
}

func (r Route) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "route v%d table %d default metric %d", r.Family, r.Table, r.Metric)
	if r.Blackhole {
		b.WriteString(" blackhole")
	}
	for _, h := range r.Hops {
		fmt.Fprintf(&b, " via %s ifindex %d", h.Gateway, h.IfIndex)
	}
	return b.String()
}

func sortHops(h []Hop) {
	slices.SortFunc(h, func(a, b Hop) int {
		if c := a.Gateway.Compare(b.Gateway); c != 0 {
			return c
		}
		return int(a.IfIndex) - int(b.IfIndex)
	})
}

// Kernel is the boundary to the kernel's routing: listing returns every
// rule and every default route of every table (the Reconciler filters ours);
// the other methods change one object each.
type Kernel interface {
	// LinkIndex returns the index of the named interface.
	LinkIndex(name string) (uint32, error)
	Rules() ([]Rule, error)
	// Routes returns the default routes (0.0.0.0/0, ::/0) of all tables.
	Routes() ([]Route, error)
	AddRule(Rule) error
	DeleteRule(Rule) error
	// ReplaceRoute creates or overwrites the route with the same key in
	// one operation: the key is never without a route while it changes.
	ReplaceRoute(Route) error
	DeleteRoute(Route) error
	// DeleteNeighbour removes addr's neighbour entry on interface ifIndex;
	// an absent entry is not an error.
	DeleteNeighbour(ifIndex uint32, addr netip.Addr) error
}
