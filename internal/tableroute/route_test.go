package tableroute

import (
	"net/netip"
	"testing"

	"github.com/jsimonetti/rtnetlink/v2"
	"golang.org/x/sys/unix"
)

var (
	gw1 = netip.MustParseAddr("10.0.0.1")
	gw2 = netip.MustParseAddr("10.0.0.2")
	gw6 = netip.MustParseAddr("fd00::1")
)

// TestReplaceMessageReadsBack: every kind of route, written as Replace
// writes it and read as List reads it, comes back equal (hops sorted),
// with the table in the header only when it fits 8 bits.
func TestReplaceMessageReadsBack(t *testing.T) {
	for _, r := range []Route{
		{Family: IPv4, Table: 50000, Metric: 100, Hops: []Hop{{Gateway: gw1, IfIndex: 2}}},
		{Family: IPv4, Table: 50000, Metric: 100, Hops: []Hop{{Gateway: gw2, IfIndex: 2}, {Gateway: gw1, IfIndex: 3}}},
		{Family: IPv6, Table: 0x10001, Metric: 1000000, Blackhole: true},
		{Family: IPv6, Table: 200, Metric: 100, Hops: []Hop{{Gateway: gw6, IfIndex: 4}}},
	} {
		m := replaceMessage(r, 83)
		if m.Protocol != 83 || m.Attributes.Table != r.Table || (r.Table < 256) != (m.Table == uint8(r.Table)) {
			t.Errorf("%s: message protocol %d, tables %d/%d", r, m.Protocol, m.Table, m.Attributes.Table)
		}
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		var back rtnetlink.RouteMessage
		if err := back.UnmarshalBinary(b); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		want := r
		want.Hops = append([]Hop(nil), r.Hops...)
		SortHops(want.Hops)
		if got, ok := RouteOf(&back); !ok || !got.Equal(want) {
			t.Errorf("wrote %s, read %s (default route: %v)", want, got, ok)
		}
	}
}

// TestRouteOfSkipsAndFlags: a route that is not a default route is not
// read; one of another type reads as a route equal to nothing wanted.
func TestRouteOfSkipsAndFlags(t *testing.T) {
	prefix := rtnetlink.RouteMessage{Family: unix.AF_INET, DstLength: 24, Type: unix.RTN_UNICAST}
	if r, ok := RouteOf(&prefix); ok {
		t.Errorf("a /24 read as %s", r)
	}
	other := rtnetlink.RouteMessage{Family: unix.AF_BRIDGE}
	if r, ok := RouteOf(&other); ok {
		t.Errorf("an AF_BRIDGE route read as %s", r)
	}
	unreachable := rtnetlink.RouteMessage{Family: unix.AF_INET6, Table: 7, Type: unix.RTN_UNREACHABLE}
	r, ok := RouteOf(&unreachable)
	if !ok || r.Table != 7 || r.Equal(Route{Family: IPv6, Table: 7, Blackhole: true}) {
		t.Errorf("an unreachable default read as %s (%v): want a route in table 7 unlike any blackhole", r, ok)
	}
}

func TestDeleteMessageSelectsByKeyOnly(t *testing.T) {
	m := deleteMessage(Route{Family: IPv6, Table: 100, Metric: 7, Hops: []Hop{{Gateway: gw6, IfIndex: 1}}})
	if m.Family != unix.AF_INET6 || m.Table != 100 || m.Attributes.Table != 100 || m.Attributes.Priority != 7 ||
		m.Scope != unix.RT_SCOPE_NOWHERE || m.Protocol != 0 || m.Type != 0 || m.Attributes.Gateway != nil || m.Attributes.Multipath != nil {
		t.Errorf("delete message %+v: want family, table and metric only", m)
	}
}

func TestStringAndFamily(t *testing.T) {
	r := Route{Family: FamilyOf(netip.MustParseAddr("::ffff:10.0.0.1")), Table: 5, Metric: 100, Hops: []Hop{{Gateway: gw1, IfIndex: 2}}}
	if got, want := r.String(), "route ipv4 table 5 default metric 100 via 10.0.0.1 ifindex 2"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if FamilyOf(gw6) != IPv6 || AF(IPv6) != unix.AF_INET6 || AF(IPv4) != unix.AF_INET {
		t.Error("families")
	}
}
