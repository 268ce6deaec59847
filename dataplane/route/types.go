package route

import (
	"errors"
	"fmt"
	"net/netip"
)

// EndpointRoute sends packets carrying Mark to Via through table Table.
type EndpointRoute struct {
	Mark, Table uint32
	Via         netip.Addr
	Interface   string
}

// Nexthop is one gateway of a return path.
type Nexthop struct {
	Addr      netip.Addr
	Interface string
}

// ReturnPath routes traffic sourced from VIPs over Gateways via table Table.
type ReturnPath struct {
	VIPs     []netip.Addr
	Table    uint32
	Gateways []Nexthop
}

// Range is the inclusive range Min..Max.
type Range struct{ Min, Max uint32 }

// Contains reports whether v is in r.
func (r Range) Contains(v uint32) bool { return r.Min <= v && v <= r.Max }

// MarkBlock is an aligned block of fwmarks: every mark m with
// m&Mask == Value, i.e. Value..Value|^Mask. Mask is a prefix mask (ones
// from the most significant bit down) and Value has no bit outside it, so
// the block is contiguous and one rule "fwmark Value/Mask" matches exactly
// its marks.
type MarkBlock struct{ Value, Mask uint32 }

// Contains reports whether mark is in b.
func (b MarkBlock) Contains(mark uint32) bool { return mark&b.Mask == b.Value }

// Last returns the highest mark of b.
func (b MarkBlock) Last() uint32 { return b.Value | ^b.Mask }

func (b MarkBlock) String() string { return fmt.Sprintf("%#x/%#x", b.Value, b.Mask) }

func (b MarkBlock) validate() error {
	inverted := ^b.Mask
	switch {
	case b.Mask == 0 || inverted&(inverted+1) != 0:
		return fmt.Errorf("%w: mark block %v: the mask is not a prefix mask", ErrInvalid, b)
	case b.Value == 0 || b.Value&inverted != 0:
		return fmt.Errorf("%w: mark block %v: the value must be non-zero and inside the mask", ErrInvalid, b)
	}
	return nil
}

// Ranges are the numbers this package owns.
type Ranges struct {
	Marks  MarkBlock // fwmarks of endpoint rules; the catch-all matches the whole block
	Tables Range     // routing tables (endpoint and return-path)
	// Priorities of rules: Min-1: the skip rule (so Min >= 2), Min:
	// fwmark rules, Min+1: the catch-all blackhole, Min+2: from-VIP
	// rules, Min+3: their blackholes. Max >= Min+3.
	Priorities Range
}

// DefaultRanges: marks 0x10000/0xffff0000 (65536-131071), tables
// 65536-131071 (an endpoint's table is its mark; dataplane.ReturnTable is
// the last), rule priorities 10000-10099 (and the skip rule at 9999).
var DefaultRanges = Ranges{
	Marks:      MarkBlock{Value: 0x10000, Mask: 0xffff0000},
	Tables:     Range{Min: 0x10000, Max: 0x1ffff},
	Priorities: Range{Min: 10000, Max: 10099},
}

// Rule priorities, as offsets from Ranges.Priorities.Min (the skip rule's
// is Min-1: see skipPriority).
const (
	markRuleOffset     = 0
	catchAllRuleOffset = 1
	fromVIPRuleOffset  = 2
	// fromVIPDropOffset: after each VIP's lookup of its return table, a
	// blackhole rule for the same source. The table ends in a blackhole
	// route, so this rule is never reached in steady state; it is reached
	// when the kernel's IPv6 lookup misses the whole table for an instant
	// while a route in it is replaced (measured: about 1 run in 60 of 100
	// back-to-back changes), and then drops instead of letting the main
	// table route a VIP's reply.
	fromVIPDropOffset = 3
)

// skipPriority is the skip rule's: just before the fwmark rules.
func (r Ranges) skipPriority() uint32 { return r.Priorities.Min - 1 }

// Route metrics in our tables.
const (
	GatewayMetric   = 100
	BlackholeMetric = 1_000_000
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid policy route")

func (r Ranges) validate() error {
	const reserved = 253 // default, main, local and above are never ours
	if err := r.Marks.validate(); err != nil {
		return err
	}
	switch {
	case r.Tables.Min == 0 || r.Tables.Min > r.Tables.Max ||
		r.Tables.Contains(reserved) || r.Tables.Contains(254) || r.Tables.Contains(255):
		return fmt.Errorf("%w: table range %v", ErrInvalid, r.Tables)
	case r.Priorities.Min < 2 || r.Priorities.Max < r.Priorities.Min+fromVIPDropOffset || r.Priorities.Max >= 32766:
		return fmt.Errorf("%w: priority range %v", ErrInvalid, r.Priorities)
	}
	return nil
}

func (e EndpointRoute) validate(r Ranges) error {
	switch {
	case !r.Marks.Contains(e.Mark):
		return fmt.Errorf("%w: mark %#x outside %v", ErrInvalid, e.Mark, r.Marks)
	case !r.Tables.Contains(e.Table):
		return fmt.Errorf("%w: table %d outside %d-%d", ErrInvalid, e.Table, r.Tables.Min, r.Tables.Max)
	case !e.Via.IsValid() || e.Via.IsUnspecified():
		return fmt.Errorf("%w: via %q", ErrInvalid, e.Via)
	case e.Interface == "":
		return fmt.Errorf("%w: no interface", ErrInvalid)
	}
	return nil
}

func (p ReturnPath) validate(r Ranges) error {
	if !r.Tables.Contains(p.Table) {
		return fmt.Errorf("%w: table %d outside %d-%d", ErrInvalid, p.Table, r.Tables.Min, r.Tables.Max)
	}
	for _, v := range p.VIPs {
		if !v.IsValid() || v.Unmap().IsUnspecified() {
			return fmt.Errorf("%w: VIP %q", ErrInvalid, v)
		}
	}
	for _, g := range p.Gateways {
		if !g.Addr.IsValid() || g.Addr.IsUnspecified() || g.Interface == "" {
			return fmt.Errorf("%w: gateway %q dev %q", ErrInvalid, g.Addr, g.Interface)
		}
	}
	return nil
}

func (e EndpointRoute) String() string {
	return fmt.Sprintf("endpoint mark %#x table %d via %s dev %s", e.Mark, e.Table, e.Via, e.Interface)
}

func (p ReturnPath) String() string {
	return fmt.Sprintf("return path table %d", p.Table)
}
