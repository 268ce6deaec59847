package bgp

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/model"
)

// seedRouters are the seed's GatewayRouter (gateway-a-v4) and its IPv6 twin.
func seedRouters() []model.Router {
	bgpParams := func() *model.BGP {
		return &model.BGP{LocalASN: 8103, RemoteASN: 4248829953, HoldTime: 24 * time.Second, LocalPort: 10179, RemotePort: 10179}
	}
	bfd := model.BFD{Enabled: true, MinTx: 300 * time.Millisecond, MinRx: 300 * time.Millisecond, Multiplier: 5}
	return []model.Router{
		{Name: "default/gateway-a-v4", Address: netip.MustParseAddr(gwV4), Interface: "vlan-100", BGP: bgpParams(), BFD: bfd},
		{Name: "default/gateway-a-v6", Address: netip.MustParseAddr(gwV6), Interface: "vlan-100", BGP: bgpParams(), BFD: bfd},
		{Name: "default/static", Address: netip.MustParseAddr("169.254.100.254"), Interface: "vlan-100"},
	}
}

func hasGateway(l []Gateway, peer, nextHop string) bool {
	for _, g := range l {
		if g.Peer.String() == peer && g.NextHop.String() == nextHop && g.Interface == "vlan-100" {
			return true
		}
	}
	return false
}

func TestIntegrationBIRDGateway(t *testing.T) {
	requireLab(t)
	l := newLab(t)
	sp := l.startSpeaker()
	vips := []netip.Addr{netip.MustParseAddr("20.0.0.1"), netip.MustParseAddr("20.0.0.2"), netip.MustParseAddr("fd20::1")}

	start := time.Now()
	sp.do(helperCmd{Op: "apply", Routers: seedRouters()})
	sp.do(helperCmd{Op: "announce", VIPs: vips})
	up := l.waitFor(30*time.Second, "both sessions established at BIRD", func() bool {
		return strings.Contains(l.birdProto("lb4"), "Established") && strings.Contains(l.birdProto("lb6"), "Established")
	})
	t.Logf("sessions established %v after Apply", up)
	d := l.waitFor(10*time.Second, "VIP routes at BIRD", func() bool {
		return strings.Contains(l.gwRoute("20.0.0.1"), "via "+lbV4) && strings.Contains(l.gwRoute("20.0.0.2"), "via "+lbV4) &&
			strings.Contains(l.gwRoute("fd20::1"), "via "+lbV6)
	})
	t.Logf("VIP routes installed at the gateway %v after establishment (%v after Apply): %q / %q",
		d, time.Since(start), l.gwRoute("20.0.0.1"), l.gwRoute("fd20::1"))

	learned := sp.waitGateways(start, 10*time.Second, func(g Gateways) bool {
		return hasGateway(g.IPv4, gwV4, gwV4) && hasGateway(g.IPv6, gwV6, gwV6)
	})
	t.Logf("default routes learned %v after Apply: %+v", learned, sp.latest)
	checkStats(t, sp)

	// Withdraw one VIP.
	t0 := time.Now()
	sp.do(helperCmd{Op: "announce", VIPs: []netip.Addr{vips[0], vips[2]}})
	d = l.waitFor(10*time.Second, "20.0.0.2 withdrawn at BIRD", func() bool { return l.gwRoute("20.0.0.2") == "" })
	t.Logf("VIP withdrawal reached the gateway kernel in %v (since Announce call %v)", d, time.Since(t0))
	if l.gwRoute("20.0.0.1") == "" {
		t.Fatal("20.0.0.1 was withdrawn too")
	}

	// BFD down on the IPv4 peer.
	t0 = time.Now()
	sp.do(helperCmd{Op: "down", Addr: netip.MustParseAddr(gwV4), Reason: "control detection time expired"})
	gone := sp.waitGateways(t0, 5*time.Second, func(g Gateways) bool { return len(g.IPv4) == 0 && len(g.IPv6) == 1 })
	d = l.waitFor(5*time.Second, "BIRD drops 20.0.0.1", func() bool { return l.gwRoute("20.0.0.1") == "" })
	t.Logf("PeerDown: IPv4 gateway removed from our set in %v; BIRD removed the VIP route in %v (%s)",
		gone, time.Since(t0), firstLine(l.birdProto("lb4"), 2))
	if l.gwRoute("fd20::1") == "" {
		t.Fatal("PeerDown of the IPv4 peer took down the IPv6 route")
	}

	// BFD up again.
	t0 = time.Now()
	sp.do(helperCmd{Op: "up", Addr: netip.MustParseAddr(gwV4)})
	d = l.waitFor(30*time.Second, "BIRD re-learns 20.0.0.1", func() bool { return strings.Contains(l.gwRoute("20.0.0.1"), "via "+lbV4) })
	back := sp.waitGateways(t0, 10*time.Second, func(g Gateways) bool { return hasGateway(g.IPv4, gwV4, gwV4) })
	t.Logf("PeerUp: VIP route back at the gateway in %v, default route back in our set in %v", d, back)

	// Shutdown withdraws before the sessions close.
	t0 = time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sp.do(helperCmd{Op: "shutdown", Drain: time.Second})
	}()
	var routesGone, sessionGone time.Duration
	l.waitFor(15*time.Second, "routes withdrawn and session closed", func() bool {
		if routesGone == 0 && l.gwRoute("20.0.0.1") == "" && l.gwRoute("fd20::1") == "" {
			routesGone = time.Since(t0)
		}
		if sessionGone == 0 && !strings.Contains(l.birdProto("lb4"), "Established") {
			sessionGone = time.Since(t0)
		}
		return routesGone != 0 && sessionGone != 0
	})
	<-done
	t.Logf("Shutdown(drain 1s): routes gone at the gateway after %v, session closed after %v", routesGone, sessionGone)
	if routesGone >= sessionGone {
		t.Fatalf("session closed (%v) before the VIPs were withdrawn (%v)", sessionGone, routesGone)
	}
}

func checkStats(t *testing.T, sp *speakerProc) {
	t.Helper()
	st := sp.do(helperCmd{Op: "stats"}).Stats
	if len(st) != 2 {
		t.Fatalf("stats for %d peers, want 2: %+v", len(st), st)
	}
	for _, s := range st {
		t.Logf("stats %s: %+v", s.Peer, s)
		wantAnnounced := uint64(2)
		if s.Peer.Is6() {
			wantAnnounced = 1
		}
		// BIRD sends a default route and one other prefix per family; only
		// the default passes our import policy.
		if s.State != StateEstablished || s.Received != 2 || s.Accepted != 1 || s.Announced != wantAnnounced {
			t.Errorf("peer %s: state %s received %d accepted %d announced %d; want established 2 1 %d",
				s.Peer, s.State, s.Received, s.Accepted, s.Announced, wantAnnounced)
		}
	}
}

func firstLine(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		return strings.TrimSpace(lines[n])
	}
	return strings.TrimSpace(s)
}

// TestIntegrationSourcePortBinding runs the seed with WithSourcePortBinding:
// the sessions come from port 10179 on both families, and it measures how
// long recovery after PeerDown/PeerUp takes when the kernel keeps the old
// connection's port in TIME_WAIT.
func TestIntegrationSourcePortBinding(t *testing.T) {
	requireLab(t)
	l := newLab(t)
	sp := l.startSpeaker(helperEnv + "_BIND=1")
	start := time.Now()
	sp.do(helperCmd{Op: "apply", Routers: seedRouters()})
	sp.do(helperCmd{Op: "announce", VIPs: []netip.Addr{netip.MustParseAddr("20.0.0.1")}})
	up := l.waitFor(30*time.Second, "both sessions established", func() bool {
		return strings.Contains(l.birdProto("lb4"), "Established") && strings.Contains(l.birdProto("lb6"), "Established")
	})
	t.Logf("sessions established %v after Apply (%v)", up, time.Since(start))
	ss := l.run("ip", "netns", "exec", l.gw, "ss", "-tnH", "state", "established")
	for _, want := range []string{lbV4 + ":10179", "[" + lbV6 + "]:10179"} {
		if !strings.Contains(ss, want) {
			t.Fatalf("no session from %s at the gateway:\n%s", want, ss)
		}
	}
	if testing.Short() {
		return
	}
	t0 := time.Now()
	sp.do(helperCmd{Op: "down", Addr: netip.MustParseAddr(gwV4), Reason: "test"})
	l.waitFor(5*time.Second, "route withdrawn", func() bool { return l.gwRoute("20.0.0.1") == "" })
	sp.do(helperCmd{Op: "up", Addr: netip.MustParseAddr(gwV4)})
	d := l.waitFor(100*time.Second, "route back", func() bool { return strings.Contains(l.gwRoute("20.0.0.1"), "via "+lbV4) })
	t.Logf("with a fixed source port, recovery after PeerUp took %v (PeerDown at -%v)", d, time.Since(t0)-d)
}
