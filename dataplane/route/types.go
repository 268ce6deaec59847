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

// Ranges are the numbers this package owns.
type Ranges struct {
	Marks      Range // fwmarks of endpoint rules
	Tables     Range // routing tables (endpoint and return-path)
	Priorities Range // rule priorities; Min: fwmark rules, Min+1: from-VIP rules
}

// DefaultRanges: marks and tables 10000-19999, rule priorities 10000-10099.
var DefaultRanges = Ranges{
	Marks:      Range{Min: 10000, Max: 19999},
	Tables:     Range{Min: 10000, Max: 19999},
	Priorities: Range{Min: 10000, Max: 10099},
}

// Route metrics in our tables.
const (
	GatewayMetric   = 100
	BlackholeMetric = 1_000_000
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid policy route")

func (r Ranges) validate() error {
	const reserved = 253 // default, main, local and above are never ours
	switch {
	case r.Marks.Min == 0 || r.Marks.Min > r.Marks.Max:
		return fmt.Errorf("%w: mark range %v", ErrInvalid, r.Marks)
	case r.Tables.Min == 0 || r.Tables.Min > r.Tables.Max ||
		r.Tables.Contains(reserved) || r.Tables.Contains(254) || r.Tables.Contains(255):
		return fmt.Errorf("%w: table range %v", ErrInvalid, r.Tables)
	case r.Priorities.Min == 0 || r.Priorities.Min >= r.Priorities.Max || r.Priorities.Max >= 32766:
		return fmt.Errorf("%w: priority range %v", ErrInvalid, r.Priorities)
	}
	return nil
}

func (e EndpointRoute) validate(r Ranges) error {
	switch {
	case !r.Marks.Contains(e.Mark):
		return fmt.Errorf("%w: mark %d outside %d-%d", ErrInvalid, e.Mark, r.Marks.Min, r.Marks.Max)
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
	return fmt.Sprintf("endpoint mark %d table %d via %s dev %s", e.Mark, e.Table, e.Via, e.Interface)
}

func (p ReturnPath) String() string {
	return fmt.Sprintf("return path table %d", p.Table)
}
