package bgp

import (
	"net/netip"
	"testing"
)

func TestDeriveRouterID(t *testing.T) {
	a := netip.MustParseAddr
	global6 := a("2001:db8::7")
	tests := []struct {
		name  string
		addrs []netip.Addr
		host  string
		want  netip.Addr
	}{
		{"first usable IPv4", []netip.Addr{a("127.0.0.1"), a("::1"), a("10.0.0.5"), a("10.0.0.6")}, "pod", a("10.0.0.5")},
		{"mapped IPv4", []netip.Addr{a("::ffff:10.1.2.3")}, "pod", a("10.1.2.3")},
		{"link-local IPv4 allowed", []netip.Addr{a("169.254.100.1")}, "pod", a("169.254.100.1")},
		{"IPv6-only: hash of first global", []netip.Addr{a("::1"), a("fe80::1"), global6, a("2001:db8::8")}, "pod", hashedRouterID(global6.AsSlice())},
		{"no global address: hash of name", []netip.Addr{a("::1"), a("fe80::1")}, "sllbrd-7f9c", hashedRouterID([]byte("sllbrd-7f9c"))},
		{"nothing", nil, "", netip.Addr{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DeriveRouterID(tt.addrs, tt.host)
			if got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if got.IsValid() && (!got.Is4() || got.IsUnspecified()) {
				t.Fatalf("router id %v is not a usable IPv4 identifier", got)
			}
		})
	}
}

func TestHashedRouterIDIsStableAndSpread(t *testing.T) {
	x := hashedRouterID([]byte("pod-a"))
	if x != hashedRouterID([]byte("pod-a")) {
		t.Fatal("hash not deterministic")
	}
	if x == hashedRouterID([]byte("pod-b")) {
		t.Fatal("different names gave the same id")
	}
	// FNV-1a of "a" is 0xe40c292c.
	if got, want := hashedRouterID([]byte("a")), netip.MustParseAddr("228.12.41.44"); got != want {
		t.Fatalf("hash(a) = %v, want %v", got, want)
	}
}

func TestLocalRouterIDIsIPv4(t *testing.T) {
	if id := LocalRouterID(); !id.Is4() || id.IsUnspecified() {
		t.Fatalf("LocalRouterID() = %v", id)
	}
}
