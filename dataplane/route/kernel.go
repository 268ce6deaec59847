package route

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// The address families and default routes are tableroute's, shared with
// the target side.
type (
	Family = tableroute.Family
	Hop    = tableroute.Hop
	Route  = tableroute.Route
)

// The address families.
const (
	IPv4 = tableroute.IPv4
	IPv6 = tableroute.IPv6
)

// Rule is a policy routing rule as this package sees it: packets matching
// Mark/Mask (when Mark is non-zero) and Src (when valid), or with Invert
// the packets that do not match them, look up Table, or are dropped when
// Blackhole is set (action blackhole, Table 0), or continue at the first
// rule of priority Goto when it is non-zero (action goto, Table 0).
type Rule struct {
	Family    Family
	Priority  uint32
	Invert    bool // "not": only with Goto (an inverted lookup or blackhole is never ours)
	Mark      uint32
	Mask      uint32 // with Mark; 0xffffffff for one mark
	Src       netip.Prefix
	Table     uint32
	Blackhole bool
	Goto      uint32
}

// exactMask selects one fwmark.
const exactMask = 0xffffffff

func (r Rule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rule %s pref %d", r.Family, r.Priority)
	if r.Invert {
		b.WriteString(" not")
	}
	if r.Mark != 0 {
		fmt.Fprintf(&b, " fwmark %#x", r.Mark)
		if r.Mask != exactMask {
			fmt.Fprintf(&b, "/%#x", r.Mask)
		}
	}
	if r.Src.IsValid() {
		fmt.Fprintf(&b, " from %s", r.Src)
	}
	switch {
	case r.Blackhole:
		b.WriteString(" blackhole")
	case r.Goto != 0:
		fmt.Fprintf(&b, " goto %d", r.Goto)
	default:
		fmt.Fprintf(&b, " lookup %d", r.Table)
	}
	return b.String()
}

// Kernel is the boundary to the kernel's routing: listing returns every
// rule and every default route of every table (the Reconciler filters ours);
// the other methods change one object each.
type Kernel interface {
	// LinkIndex returns the index of the named interface.
	LinkIndex(name string) (uint32, error)
	Rules() ([]Rule, error)
	// Routes returns the default routes (0.0.0.0/0, ::/0) of all tables,
	// each with its hops in tableroute.SortHops order.
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

// ChangeWatcher is implemented by a Kernel that can tell whether anything
// but its own calls may have changed rules or routes. A Reconciler over
// such a Kernel lists rules and routes only when something may have, and
// otherwise works from the last listing and its own successful changes.
type ChangeWatcher interface {
	// ChangedElsewhere reports whether, since its previous call, rules or
	// default routes may have been changed by another writer or by the
	// kernel itself (e.g. routes flushed with a link that went down). It
	// must report true when it cannot tell, and must not report false for
	// a change that completed before the call.
	ChangedElsewhere() bool
}
