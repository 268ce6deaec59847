package bgp

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/sllbrd/sllbrd/model"
)

func TestPeerSpecs(t *testing.T) {
	routers := seedRouters() // v4, v6, static
	routers = append(routers,
		model.Router{Name: "dup", Address: netip.MustParseAddr(gwV4), BGP: &model.BGP{RemoteASN: 1}},
		model.Router{Name: "no-asn", Address: netip.MustParseAddr("192.0.2.1"), BGP: &model.BGP{}},
		model.Router{Name: "ll-no-if", Address: netip.MustParseAddr("fe80::1"), BGP: &model.BGP{RemoteASN: 1}},
		model.Router{Name: "ll", Address: netip.MustParseAddr("fe80::2"), Interface: "eth1", BGP: &model.BGP{RemoteASN: 65001}},
	)
	specs, err := peerSpecs(routers, 64999)
	for _, want := range []string{`"dup"`, `"no-asn"`, `"ll-no-if"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not report %s", err, want)
		}
	}
	if len(specs) != 3 {
		t.Fatalf("got %d specs, want 3 (v4, v6, link-local): %+v", len(specs), specs)
	}
	v4 := specs[netip.MustParseAddr(gwV4)]
	want := peerSpec{name: "default/gateway-a-v4", addr: netip.MustParseAddr(gwV4), iface: "vlan-100", localASN: 8103,
		remoteASN: 4248829953, holdSecs: 24, localPort: 10179, remotePort: 10179, bfd: true}
	if v4 != want {
		t.Errorf("seed router spec\n got %+v\nwant %+v", v4, want)
	}
	ll, ok := specs[netip.MustParseAddr("fe80::2%eth1")]
	if !ok || ll.localASN != 64999 || ll.holdSecs != 90 {
		t.Errorf("link-local spec %+v: want zone eth1, global ASN 64999, default hold 90", ll)
	}
}

func TestDiffPeers(t *testing.T) {
	a1, a2, a3 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	base := map[netip.Addr]peerSpec{
		a1: {name: "r1", addr: a1, remoteASN: 1, holdSecs: 90},
		a2: {name: "r2", addr: a2, remoteASN: 2, holdSecs: 90},
	}
	with := func(f func(m map[netip.Addr]peerSpec)) map[netip.Addr]peerSpec {
		m := map[netip.Addr]peerSpec{}
		for k, v := range base {
			m[k] = v
		}
		f(m)
		return m
	}
	tests := []struct {
		name string
		want map[netip.Addr]peerSpec
		plan peerPlan
	}{
		{"unchanged", base, peerPlan{}},
		{"hold time of one", with(func(m map[netip.Addr]peerSpec) { s := m[a2]; s.holdSecs = 24; m[a2] = s }),
			peerPlan{remove: []netip.Addr{a2}, add: []netip.Addr{a2}}},
		{"rename and BFD flag only", with(func(m map[netip.Addr]peerSpec) { s := m[a1]; s.name, s.bfd = "x", true; m[a1] = s }),
			peerPlan{update: []netip.Addr{a1}}},
		{"add and remove", with(func(m map[netip.Addr]peerSpec) { delete(m, a1); m[a3] = peerSpec{addr: a3, remoteASN: 3} }),
			peerPlan{remove: []netip.Addr{a1}, add: []netip.Addr{a3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diffPeers(base, tt.want)
			if !equalAddrs(got.remove, tt.plan.remove) || !equalAddrs(got.add, tt.plan.add) || !equalAddrs(got.update, tt.plan.update) {
				t.Fatalf("got %+v, want %+v", got, tt.plan)
			}
		})
	}
}

func equalAddrs(a, b []netip.Addr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAPIPeerFromSeed(t *testing.T) {
	specs, _ := peerSpecs(seedRouters(), DefaultGlobalASN)
	cfg := defaultConfig()
	v4 := specs[netip.MustParseAddr(gwV4)]
	v4.localAddr = netip.MustParseAddr(lbV4)
	p := apiPeer(v4, cfg, true)
	c, tr, tm := p.GetConf(), p.GetTransport(), p.GetTimers().GetConfig()
	if c.NeighborAddress != gwV4 || c.PeerAsn != 4248829953 || c.LocalAsn != 8103 || !c.AdminDown {
		t.Errorf("conf %+v", c)
	}
	if tr.LocalPort != 10179 || tr.RemotePort != 10179 || tr.BindInterface != "vlan-100" || tr.LocalAddress != lbV4 {
		t.Errorf("transport %+v", tr)
	}
	if tm.HoldTime != 24 || tm.KeepaliveInterval != 8 || tm.ConnectRetry != 3 || tm.IdleHoldTimeAfterReset != 2 {
		t.Errorf("timers %+v", tm)
	}
	if len(p.AfiSafis) != 1 || p.AfiSafis[0].Config.Family.Afi != api.Family_AFI_IP {
		t.Errorf("families %+v, want only ipv4-unicast", p.AfiSafis)
	}
	v6 := specs[netip.MustParseAddr(gwV6)]
	v6.localPort = 0 // source port binding off: no explicit local address either
	p6 := apiPeer(v6, cfg, false)
	if p6.AfiSafis[0].Config.Family.Afi != api.Family_AFI_IP6 || p6.Transport.LocalAddress != "" || p6.Transport.LocalPort != 0 {
		t.Errorf("IPv6 peer %+v", p6)
	}
}

func TestWholeSeconds(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		min  uint64
		want uint64
	}{{24 * time.Second, 3, 24}, {1500 * time.Millisecond, 1, 2}, {0, 1, 1}, {time.Second, 3, 3}} {
		if got := wholeSeconds(tt.d, tt.min); got != tt.want {
			t.Errorf("wholeSeconds(%v, %d) = %d, want %d", tt.d, tt.min, got, tt.want)
		}
	}
}
