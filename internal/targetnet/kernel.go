package targetnet

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Link is a network interface.
type Link struct {
	Index uint32
	Name  string
}

// Address is an interface address. Protocol is its IFA_PROTO (0 when the
// kernel reports none): ours carry Protocol.
type Address struct {
	LinkIndex uint32
	Prefix    netip.Prefix // the address with its prefix length
	Protocol  uint8
}

func (a Address) String() string {
	return fmt.Sprintf("address %s ifindex %d proto %d", a.Prefix, a.LinkIndex, a.Protocol)
}

// Rule is a policy routing rule. Plain is set for a rule that only selects
// on its source prefix and looks up Table, or is a blackhole (our kinds);
// any other selector or action clears it.
type Rule struct {
	Family    Family
	Priority  uint32
	Src       netip.Prefix // invalid: from all
	Table     uint32       // 0 for a blackhole
	Blackhole bool
	Protocol  uint8
	Plain     bool
}

func (r Rule) String() string {
	src := "all"
	if r.Src.IsValid() {
		src = r.Src.String()
	}
	action := fmt.Sprintf("lookup %d", r.Table)
	if r.Blackhole {
		action = "blackhole"
	}
	s := fmt.Sprintf("rule %s pref %d from %s %s proto %d", r.Family, r.Priority, src, action, r.Protocol)
	if !r.Plain {
		s += " (with other selectors or actions)"
	}
	return s
}

// Hop is one next hop of a route.
type Hop struct {
	Gateway netip.Addr
	IfIndex uint32
}

// Route is a default route of one table: a blackhole, or unicast over Hops
// (one, or several for ECMP).
type Route struct {
	Family    Family
	Table     uint32
	Metric    uint32
	Blackhole bool
	Hops      []Hop // sorted by gateway, then interface
}

// routeKey is what a replace overwrites.
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
	fmt.Fprintf(&b, "route %s table %d default metric %d", r.Family, r.Table, r.Metric)
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

// Kernel is the boundary to the pod's network namespace. Listing returns
// everything (the Applier tells ours from foreign); each other method
// changes one object.
type Kernel interface {
	Links() ([]Link, error)
	Addresses() ([]Address, error)
	// AddAddress adds a with its Protocol; IPv6 without duplicate address
	// detection (IFA_F_NODAD).
	AddAddress(a Address) error
	DeleteAddress(a Address) error
	Rules() ([]Rule, error)
	AddRule(r Rule) error
	DeleteRule(r Rule) error
	// Routes returns the default routes (0.0.0.0/0, ::/0) of every table.
	Routes() ([]Route, error)
	// ReplaceRoute creates the route or overwrites the one with its key in
	// one RTM_NEWROUTE with NLM_F_REPLACE: the table is never without it.
	ReplaceRoute(r Route) error
	DeleteRoute(r Route) error
	// DeleteNeighbour removes addr's neighbour entry on ifIndex; an absent
	// entry is not an error.
	DeleteNeighbour(ifIndex uint32, addr netip.Addr) error
}
