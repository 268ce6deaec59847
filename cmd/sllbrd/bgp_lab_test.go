package main

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// The seed's BFD timers: 300 ms x 5.
const detectionTime = 5 * 300 * time.Millisecond

var seedRouters = []e2e.Router{
	{Name: "gateway-a-v4", Address: "169.254.100.150", Spec: e2e.SeedBGP},
	{Name: "gateway-a-v6", Address: "fd00:169::150", Spec: e2e.SeedBGP},
}

func startBIRD(t *testing.T, l *lab.Lab, cfg lab.BIRDConfig) *lab.BIRD {
	t.Helper()
	require.Programs(t, "bird", "birdc")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := l.StartBIRD(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := b.Birdc(context.Background(), "show", "protocols", "all")
			t.Logf("BIRD protocols:\n%s", out)
		}
		_ = b.Stop()
	})
	return b
}

// waitFor polls cond every 20 ms until it holds and returns how long that
// took; it fails the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return waitSince(t, time.Now(), limit, what, cond)
}

// waitSince is waitFor measuring from start.
func waitSince(t *testing.T, start time.Time, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// cutLink makes the gateway drop everything to and from the LB addresses
// lb (IPv4, IPv6) in one nft transaction, so both families are cut at the
// same instant, and returns that instant. Deleting table inet cut restores.
func cutLink(t *testing.T, l *lab.Lab, lb []netip.Addr) time.Time {
	t.Helper()
	rules := fmt.Sprintf("table inet cut {\n chain in { type filter hook prerouting priority -400; ip saddr %[1]s drop; ip6 saddr %[2]s drop; }\n"+
		" chain out { type filter hook output priority -400; ip daddr %[1]s drop; ip6 daddr %[2]s drop; }\n}\n", lb[0], lb[1])
	at := time.Now()
	if out, err := l.ExecInput(context.Background(), lab.GatewayNode, rules, "nft", "-f", "-"); err != nil {
		t.Fatalf("cut: %v: %s", err, out)
	}
	return at
}

func exec1(t *testing.T, l *lab.Lab, node string, args ...string) string {
	t.Helper()
	out, err := l.Exec(context.Background(), node, args...)
	if err != nil {
		t.Fatalf("%s: %v: %v: %s", node, args, err, out)
	}
	return out
}

func birdc(t *testing.T, b *lab.BIRD, args ...string) string {
	t.Helper()
	out, err := b.Birdc(context.Background(), args...)
	if err != nil {
		t.Fatalf("birdc %v: %v: %s", args, err, out)
	}
	return out
}

// bfdUp reports whether BIRD's BFD session with peer is Up.
func bfdUp(t *testing.T, b *lab.BIRD, peer netip.Addr) bool {
	for line := range strings.SplitSeq(birdc(t, b, "show", "bfd", "sessions"), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == peer.String() {
			return f[2] == "Up"
		}
	}
	return false
}

func gwRoutes(t *testing.T, l *lab.Lab, vip netip.Addr, via netip.Addr) bool {
	fam := "-4"
	if vip.Is6() {
		fam = "-6"
	}
	return strings.Contains(exec1(t, l, lab.GatewayNode, "ip", fam, "route", "show", netip.PrefixFrom(vip, vip.BitLen()).String()), "via "+via.String())
}

func returnPathVia(t *testing.T, l *lab.Lab, gw netip.Addr) bool {
	fam := "-4"
	if gw.Is6() {
		fam = "-6"
	}
	return strings.Contains(exec1(t, l, lab.LBName(1), "ip", fam, "route", "show", "table", "19999"), "via "+gw.String())
}

// TestIntegrationBIRDGateway: sllbrd peers with BIRD configured like
// Meridio's gateway (BGP on 10179, BFD 300 ms x 5), IPv4 and IPv6.
func TestIntegrationBIRDGateway(t *testing.T) {
	l := labSetup(t, 1)
	cfg := l.DefaultBIRDConfig()
	cfg.BFD = &lab.BFDConfig{MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 5}
	b := startBIRD(t, l, cfg)
	_, insts := startInstances(t, l, e2e.Config{Routers: seedRouters, Services: allTargets, Routes: webRoute}, 1)
	lb := []netip.Addr{lab.LBGatewaySide(1).V4.Addr(), lab.LBGatewaySide(1).V6.Addr()}
	gw := []netip.Addr{lab.GatewayAddrs().V4.Addr(), lab.GatewayAddrs().V6.Addr()}
	vips := []netip.Addr{vip4, vip6}

	for i := range 2 {
		d := waitFor(t, 20*time.Second, fmt.Sprintf("BIRD routes %v via sllbrd", vips[i]), func() bool { return gwRoutes(t, l, vips[i], lb[i]) })
		t.Logf("%v: BIRD installed the VIP via %v %v after sllbrd was ready", vips[i], lb[i], d.Round(time.Millisecond))
		waitFor(t, 10*time.Second, "BFD up at BIRD", func() bool { return bfdUp(t, b, lb[i]) })
		waitFor(t, 10*time.Second, "return path via the gateway", func() bool { return returnPathVia(t, l, gw[i]) })
	}
	sessions := birdc(t, b, "show", "bfd", "sessions")
	if !strings.Contains(sessions, "0.300") || !strings.Contains(sessions, "1.500") {
		t.Errorf("BIRD's BFD sessions do not show the negotiated 300 ms interval and 1.5 s timeout:\n%s", sessions)
	}
	for _, g := range gw {
		if v, ok, err := insts[0].Metric(fmt.Sprintf(`sllbrd_bfd_session_up{interface="vlan-100",multihop="false",peer=%q}`, g)); err != nil || !ok || v != 1 {
			t.Errorf("sllbrd_bfd_session_up for %v = %v (found %v, err %v)", g, v, ok, err)
		}
	}
	for _, vip := range vips {
		flows(t, l, lab.FlowOptions{VIP: vip, Port: 5000, Count: 50})
	}

	// Cut the link: the gateway drops everything to and from the LB.
	cutAt := cutLink(t, l, lb)
	limit := detectionTime + time.Second
	for i := range 2 {
		bird := waitSince(t, cutAt, limit, "BIRD detects the cut", func() bool { return !bfdUp(t, b, lb[i]) })
		route := waitSince(t, cutAt, limit, "BIRD withdraws the VIP", func() bool { return !gwRoutes(t, l, vips[i], lb[i]) })
		ours := waitSince(t, cutAt, limit, "sllbrd removes the gateway from the return path", func() bool { return !returnPathVia(t, l, gw[i]) })
		t.Logf("cut, %v (detection time %v): BIRD BFD down after %v, VIP route gone after %v, sllbrd return path without the gateway after %v",
			vips[i], detectionTime, bird.Round(time.Millisecond), route.Round(time.Millisecond), ours.Round(time.Millisecond))
	}

	exec1(t, l, lab.GatewayNode, "nft", "delete", "table", "inet", "cut")
	restoredAt := time.Now()
	for i := range 2 {
		bfd := waitSince(t, restoredAt, 15*time.Second, "BFD back up at BIRD", func() bool { return bfdUp(t, b, lb[i]) })
		route := waitSince(t, restoredAt, 30*time.Second, "VIP route back at BIRD", func() bool { return gwRoutes(t, l, vips[i], lb[i]) })
		ours := waitSince(t, restoredAt, 30*time.Second, "return path back", func() bool { return returnPathVia(t, l, gw[i]) })
		t.Logf("restored, %v: BFD up after %v, VIP route back after %v, return path back after %v",
			vips[i], bfd.Round(time.Millisecond), route.Round(time.Millisecond), ours.Round(time.Millisecond))
	}
	for _, vip := range vips {
		flows(t, l, lab.FlowOptions{VIP: vip, Port: 5000, Count: 50})
	}

	// SIGTERM: the VIPs are withdrawn while sllbrd still runs (drain 1 s).
	if err := syscall.Kill(insts[0].Proc.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	gone := waitFor(t, 2*time.Second, "VIP withdrawn on SIGTERM", func() bool { return !gwRoutes(t, l, vip4, lb[0]) })
	select {
	case <-insts[0].Proc.Done():
		t.Errorf("sllbrd exited before the VIP was withdrawn and drained (withdrawn after %v)", gone)
	default:
		t.Logf("SIGTERM: VIP withdrawn after %v while sllbrd kept forwarding for its drain period", gone.Round(time.Millisecond))
	}
}

// TestIntegrationStaticGatewayWithBFD: a GatewayRouter without BGP is a
// return-path next hop while its BFD session (with BIRD) is up.
func TestIntegrationStaticGatewayWithBFD(t *testing.T) {
	l := labSetup(t, 1)
	lb := []netip.Addr{lab.LBGatewaySide(1).V4.Addr(), lab.LBGatewaySide(1).V6.Addr()}
	gw := []netip.Addr{lab.GatewayAddrs().V4.Addr(), lab.GatewayAddrs().V6.Addr()}
	cfg := lab.BIRDConfig{BFD: &lab.BFDConfig{MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 3},
		BFDNeighbors: lb, Neighbors: []netip.Addr{}}
	b := startBIRD(t, l, cfg)
	bfdSpec := `static: {bfd: {switch: true, minTx: 300ms, minRx: 300ms, multiplier: 3}}`
	startInstances(t, l, e2e.Config{Routers: []e2e.Router{{Name: "gw-v4", Address: gw[0].String(), Spec: bfdSpec}, {Name: "gw-v6", Address: gw[1].String(), Spec: bfdSpec}},
		Services: allTargets, Routes: webRoute}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.RouteVIPsVia(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		waitFor(t, 10*time.Second, "BFD up at BIRD", func() bool { return bfdUp(t, b, lb[i]) })
		waitFor(t, 10*time.Second, "static gateway in the return path", func() bool { return returnPathVia(t, l, gw[i]) })
		flows(t, l, lab.FlowOptions{VIP: []netip.Addr{vip4, vip6}[i], Port: 5000, Count: 30})
	}
	cutAt := cutLink(t, l, lb)
	for i := range 2 {
		d := waitSince(t, cutAt, 900*time.Millisecond+time.Second, "static gateway removed", func() bool { return !returnPathVia(t, l, gw[i]) })
		t.Logf("cut, %v: static gateway out of the return path after %v (detection time 900ms)", gw[i], d.Round(time.Millisecond))
	}
	exec1(t, l, lab.GatewayNode, "nft", "delete", "table", "inet", "cut")
	restoredAt := time.Now()
	for i := range 2 {
		d := waitSince(t, restoredAt, 10*time.Second, "static gateway back", func() bool { return returnPathVia(t, l, gw[i]) })
		t.Logf("restored, %v: static gateway back in the return path after %v", gw[i], d.Round(time.Millisecond))
	}
}
