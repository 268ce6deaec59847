package bgp

import (
	"net/netip"
	"testing"
)

func TestPickLocalAddr(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	ifc := []netip.Prefix{p("10.0.0.1/8"), p("169.254.100.1/24"), p("fe80::1/64"), p("fd00:100::1/64"), p("2001:db8::1/64")}
	tests := []struct {
		peer netip.Addr
		want netip.Addr
	}{
		{a("169.254.100.150"), a("169.254.100.1")},
		{a("fd00:100::150"), a("fd00:100::1")},
		{a("192.0.2.1"), a("10.0.0.1")},      // no subnet: first of the family
		{a("2001:db9::1"), a("fd00:100::1")}, // first non-link-local IPv6
		{a("fe80::2%vlan-100"), a("fe80::1")},
	}
	for _, tt := range tests {
		if got := pickLocalAddr(ifc, tt.peer); got != tt.want {
			t.Errorf("peer %v: got %v, want %v", tt.peer, got, tt.want)
		}
	}
	if got := pickLocalAddr([]netip.Prefix{p("10.0.0.1/8")}, a("fd00::1")); got.IsValid() {
		t.Errorf("no IPv6 address: got %v, want none", got)
	}
}
