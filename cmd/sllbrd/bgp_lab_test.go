package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// The seed's BFD timers: 300 ms x 5.
const detectionTime = 5 * 300 * time.Millisecond

// seedBFD is a BIRD BFD configuration with the seed's timers.
func seedBFD() *lab.BFDConfig {
	return &lab.BFDConfig{MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 5}
}

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
			msg := fmt.Sprintf("%s: not within %v", what, limit)
			noteFailure(t, msg)
			t.Fatal(msg)
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
		msg := fmt.Sprintf("%s: %v: %v: %s", node, args, err, out)
		noteFailure(t, msg)
		t.Fatal(msg)
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
	return strings.Contains(exec1(t, l, lab.LBName(1), "ip", fam, "route", "show", "table", fmt.Sprint(dataplane.ReturnTable)), "via "+gw.String())
}

// TestIntegrationBIRDGateway: sllbrd peers with BIRD configured like
// Meridio's gateway (BGP on 10179, BFD 300 ms x 5), IPv4 and IPv6.
func TestIntegrationBIRDGateway(t *testing.T) {
	l := labSetup(t, 1)
	cfg := l.DefaultBIRDConfig()
	cfg.BFD = seedBFD()
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

// deleteGateway rewrites the manifests in dir without the Gateway (the
// first document of e2e's file), atomically.
func deleteGateway(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "sllb-a.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n---\n")
	if !ok || !strings.HasPrefix(string(b), "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n") {
		t.Fatalf("%s does not start with the Gateway", path)
	}
	tmp := filepath.Join(dir, ".sllb-a.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(rest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationBIRDGatewayDeleted: deleting the Gateway withdraws its VIPs
// from BGP (the sessions stay up, /readyz says why), and re-creating it
// announces them again.
func TestIntegrationBIRDGatewayDeleted(t *testing.T) {
	require.Lab(t)
	l := labSetup(t, 1)
	cfg := l.DefaultBIRDConfig()
	cfg.BFD = seedBFD()
	b := startBIRD(t, l, cfg)
	config := e2e.Config{Routers: seedRouters, Services: allTargets, Routes: webRoute}
	dir, insts := startInstances(t, l, config, 1)
	lb := []netip.Addr{lab.LBGatewaySide(1).V4.Addr(), lab.LBGatewaySide(1).V6.Addr()}
	vips := []netip.Addr{vip4, vip6}
	announced := func(want bool) func() bool {
		return func() bool { return gwRoutes(t, l, vips[0], lb[0]) == want && gwRoutes(t, l, vips[1], lb[1]) == want }
	}
	waitFor(t, 20*time.Second, "BIRD routes both VIPs via sllbrd", announced(true))

	deleted := time.Now()
	deleteGateway(t, dir)
	d := waitSince(t, deleted, 10*time.Second, "VIPs withdrawn at BIRD after the Gateway was deleted", announced(false))
	t.Logf("Gateway deleted: both VIP routes gone at BIRD after %v (the file source settles in two 500 ms polls)", d.Round(time.Millisecond))
	for _, a := range lb {
		if out := birdc(t, b, "show", "protocols", lab.BIRDProtocolName(a)); !strings.Contains(out, "Established") {
			t.Errorf("BGP session with %v not established after the Gateway was deleted:\n%s", a, out)
		}
	}
	status, body, err := insts[0].Get("/readyz")
	if err != nil || status != 503 || !strings.Contains(body, "no Gateway") {
		t.Errorf("/readyz with the Gateway deleted: %d %q (%v), want 503 naming the missing Gateway", status, body, err)
	}

	restored := time.Now()
	if err := e2e.Write(dir, config); err != nil {
		t.Fatal(err)
	}
	d = waitSince(t, restored, 10*time.Second, "VIPs announced again after the Gateway came back", announced(true))
	t.Logf("Gateway re-created: both VIP routes back at BIRD after %v", d.Round(time.Millisecond))
	waitFor(t, 10*time.Second, "ready again", func() bool { s, _, err := insts[0].Get("/readyz"); return err == nil && s == 200 })
}

// TestIntegrationBIRDMultihopBFDDown: GatewayRouters with multihop BFD
// (RFC 5883) from a given local address come up with BIRD's multihop BFD;
// when sllbrd's BFD session goes down (BFD packets from the gateway are
// dropped, BGP's TCP still flows) sllbrd tears the BGP session down with a
// NOTIFICATION that BIRD receives and shows: Cease, Administrative shutdown
// (GoBGP v3 cannot send RFC 9384's BFD Down subcode), with the RFC 9003
// communication "BFD down: Control Detection Time Expired" (its prefix once). BIRD's BGP
// does not use BFD here, so what ends its session is sllbrd's NOTIFICATION.
func TestIntegrationBIRDMultihopBFDDown(t *testing.T) {
	require.Lab(t)
	l := labSetup(t, 1)
	lb := []netip.Addr{lab.LBGatewaySide(1).V4.Addr(), lab.LBGatewaySide(1).V6.Addr()}
	gw := []netip.Addr{lab.GatewayAddrs().V4.Addr(), lab.GatewayAddrs().V6.Addr()}
	cfg := l.DefaultBIRDConfig()
	cfg.BFD = &lab.BFDConfig{MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 3}
	cfg.BFDNeighbors, cfg.BFDMultihop, cfg.BGPWithoutBFD = lb, true, true
	b := startBIRD(t, l, cfg)
	var routers []e2e.Router
	for i, name := range []string{"gateway-a-v4", "gateway-a-v6"} {
		routers = append(routers, e2e.Router{Name: name, Address: gw[i].String(), Spec: fmt.Sprintf(
			`bgp: {localASN: 8103, remoteASN: 4248829953, holdTime: 24s, localPort: 10179, remotePort: 10179, bfd: {switch: true, minTx: 300ms, minRx: 300ms, multiplier: 3, multihop: true, localAddress: %q}}`, lb[i])})
	}
	_, insts := startInstances(t, l, e2e.Config{Routers: routers, Services: allTargets, Routes: webRoute}, 1)
	vips := []netip.Addr{vip4, vip6}
	for i := range 2 {
		waitFor(t, 20*time.Second, fmt.Sprintf("BIRD routes %v via sllbrd", vips[i]), func() bool { return gwRoutes(t, l, vips[i], lb[i]) })
		waitFor(t, 10*time.Second, "multihop BFD up at BIRD", func() bool { return bfdUp(t, b, lb[i]) })
		metric := fmt.Sprintf(`sllbrd_bfd_session_up{interface="vlan-100",multihop="true",peer=%q}`, gw[i])
		waitFor(t, 10*time.Second, metric+" = 1", func() bool { v, ok, err := insts[0].Metric(metric); return err == nil && ok && v == 1 })
	}
	t.Logf("BIRD's BFD sessions:\n%s", birdc(t, b, "show", "bfd", "sessions"))

	// Drop the gateway's multihop BFD packets: only sllbrd's side times out.
	cut := "table inet cut {\n chain out { type filter hook output priority -400; udp dport 4784 drop; }\n}\n"
	cutAt := time.Now()
	if out, err := l.ExecInput(t.Context(), lab.GatewayNode, cut, "nft", "-f", "-"); err != nil {
		t.Fatalf("cut: %v: %s", err, out)
	}
	for i := range 2 {
		proto := lab.BIRDProtocolName(lb[i])
		var last string
		d := waitSince(t, cutAt, 3*time.Second+time.Second, "BIRD receives sllbrd's NOTIFICATION", func() bool {
			last = birdc(t, b, "show", "protocols", "all", proto)
			return strings.Contains(last, "Received: Administrative shutdown")
		})
		t.Logf("%v: BFD (900 ms detection) down at sllbrd, BGP session ended by its NOTIFICATION after %v:\n%s",
			lb[i], d.Round(time.Millisecond), lastErrorLines(last))
		// BIRD names the Cease subcode it received (2: "Administrative
		// shutdown") and shows the RFC 9003 communication as "Message".
		if !regexp.MustCompile(`Last error:\s+Received: Administrative shutdown\n`).MatchString(last) ||
			!regexp.MustCompile(`Message:\s+BFD down: Control Detection Time Expired\n`).MatchString(last) ||
			strings.Count(last, "BFD down") != 1 {
			t.Errorf("BIRD for %v: want Cease/Administrative shutdown with the message \"BFD down: Control Detection Time Expired\" (the prefix once):\n%s", lb[i], last)
		}
		waitSince(t, cutAt, 5*time.Second, "VIP route withdrawn at BIRD", func() bool { return !gwRoutes(t, l, vips[i], lb[i]) })
	}

	exec1(t, l, lab.GatewayNode, "nft", "delete", "table", "inet", "cut")
	restoredAt := time.Now()
	for i := range 2 {
		d := waitSince(t, restoredAt, 30*time.Second, "VIP route back at BIRD", func() bool { return gwRoutes(t, l, vips[i], lb[i]) })
		t.Logf("restored, %v: multihop BFD up and the VIP route back at BIRD after %v", vips[i], d.Round(time.Millisecond))
	}
}

// lastErrorLines returns the state and error lines of `show protocols all`.
func lastErrorLines(out string) string {
	var keep []string
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, "error") || strings.Contains(line, "BGP state") || strings.Contains(line, "Message") {
			keep = append(keep, strings.TrimSpace(line))
		}
	}
	return strings.Join(keep, "\n")
}
