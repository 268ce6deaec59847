package targetnet

import (
	"fmt"
	"net/netip"

	"github.com/sllbrd/sllbrd/internal/tableroute"
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

// Hop and Route are tableroute's: a next hop, and the default route of one
// table (a blackhole, or unicast over one or several hops).
type (
	Hop   = tableroute.Hop
	Route = tableroute.Route
)

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
	// Routes returns the default routes (0.0.0.0/0, ::/0) of every table,
	// each with its hops in tableroute.SortHops order.
	Routes() ([]Route, error)
	// ReplaceRoute creates the route or overwrites the one with its key in
	// one RTM_NEWROUTE with NLM_F_REPLACE: the table is never without it.
	ReplaceRoute(r Route) error
	DeleteRoute(r Route) error
	// DeleteNeighbour removes addr's neighbour entry on ifIndex; an absent
	// entry is not an error.
	DeleteNeighbour(ifIndex uint32, addr netip.Addr) error
}
