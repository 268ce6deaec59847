package bgp

import (
	"net/netip"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/apiutil"
	"github.com/osrg/gobgp/v3/pkg/packet/bgp"
)

func TestVIPPathHasUnspecifiedNextHop(t *testing.T) {
	for _, tt := range []struct{ vip, nlri, nh string }{
		{"20.0.0.1", "20.0.0.1/32", "0.0.0.0"},
		{"fd20::1", "fd20::1/128", "::"},
	} {
		p, err := vipPath(netip.MustParseAddr(tt.vip))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := apiutil.GetNativeNlri(p)
		nh, ok := pathNextHop(p)
		if n.String() != tt.nlri || !ok || nh.String() != tt.nh {
			t.Errorf("%s: nlri %v next hop %v, want %s via %s", tt.vip, n, nh, tt.nlri, tt.nh)
		}
	}
}

func TestDiffVIPs(t *testing.T) {
	a := netip.MustParseAddr
	want, err := normalizeVIPs([]netip.Addr{a("::ffff:20.0.0.1"), a("20.0.0.2"), a("20.0.0.2"), {}, a("fd20::1")})
	if err == nil {
		t.Error("invalid VIP not reported")
	}
	add, del := diffVIPs(map[netip.Addr][]byte{a("20.0.0.1"): nil, a("20.0.0.9"): nil}, want)
	if !equalAddrs(add, []netip.Addr{a("20.0.0.2"), a("fd20::1")}) || !equalAddrs(del, []netip.Addr{a("20.0.0.9")}) {
		t.Fatalf("add %v del %v", add, del)
	}
}

// learnedPath builds a path as GoBGP lists it from its global RIB.
func learnedPath(t *testing.T, prefix, peer, nextHop string) *api.Path {
	t.Helper()
	pfx := netip.MustParsePrefix(prefix)
	var nlri bgp.AddrPrefixInterface
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0)}
	if pfx.Addr().Is4() {
		nlri = bgp.NewIPAddrPrefix(uint8(pfx.Bits()), pfx.Addr().String())
		attrs = append(attrs, bgp.NewPathAttributeNextHop(nextHop))
	} else {
		nlri = bgp.NewIPv6AddrPrefix(uint8(pfx.Bits()), pfx.Addr().String())
		attrs = append(attrs, bgp.NewPathAttributeMpReachNLRI(nextHop, []bgp.AddrPrefixInterface{nlri}))
	}
	p, err := apiutil.NewPath(nlri, false, attrs, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p.NeighborIp = peer
	return p
}

func TestLearnedDefaults(t *testing.T) {
	local, _ := vipPath(netip.MustParseAddr("20.0.0.1"))
	local.NeighborIp = "<nil>"
	withdrawn := learnedPath(t, "0.0.0.0/0", "10.0.0.3", "10.0.0.3")
	withdrawn.IsWithdraw = true
	d := &api.Destination{Paths: []*api.Path{
		learnedPath(t, "0.0.0.0/0", "10.0.0.1", "10.0.0.1"),
		learnedPath(t, "0.0.0.0/0", "10.0.0.2", "10.0.0.254"),
		withdrawn, local,
		learnedPath(t, "10.99.0.0/16", "10.0.0.1", "10.0.0.1"),
	}}
	got := learnedDefaults(d)
	want := []learnedDefault{
		{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.1")},
		{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.254")},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	v6 := learnedDefaults(&api.Destination{Paths: []*api.Path{learnedPath(t, "::/0", "fd00::150", "fd00::150")}})
	if len(v6) != 1 || v6[0].nextHop != netip.MustParseAddr("fd00::150") {
		t.Fatalf("IPv6 default: %+v", v6)
	}
}

func TestGatewayPublisherKeepsLatestOnly(t *testing.T) {
	p := newGatewayPublisher()
	g1 := Gateways{IPv4: []Gateway{{Peer: netip.MustParseAddr("10.0.0.1")}}}
	g2 := Gateways{IPv4: []Gateway{{Peer: netip.MustParseAddr("10.0.0.2")}}}
	if !p.publish(g1) || p.publish(g1) {
		t.Fatal("publish must report only changes")
	}
	p.publish(g2)
	if got := <-p.ch; !got.Equal(g2) {
		t.Fatalf("consumer got %+v, want the latest %+v", got, g2)
	}
	select {
	case g := <-p.ch:
		t.Fatalf("stale set %+v still queued", g)
	default:
	}
}
