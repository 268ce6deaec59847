package main

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationNotReadyUntilReturnPath: sllbrd started with GatewayRouters
// (BGP and BFD, IPv4 and IPv6) while the gateway's BIRD is not running
// programs its configuration but stays not ready, saying the return path is
// missing, because the targets' replies through it would be dropped; it
// becomes ready once BIRD runs and both gateways are in the return path,
// and stays ready when BIRD stops again and the sessions go down (the latch).
func TestIntegrationNotReadyUntilReturnPath(t *testing.T) {
	require.Programs(t, "bird", "birdc")
	l := labSetup(t, 1)
	gw := []netip.Addr{lab.GatewayAddrs().V4.Addr(), lab.GatewayAddrs().V6.Addr()}
	_, inst := startUnready(t, l, e2e.Config{Routers: seedRouters, Services: allTargets, Routes: webRoute})

	// No gateway: the configuration is programmed, the return table holds
	// only its blackhole, and /readyz says why it is not ready.
	programmed := time.Now()
	for i := 0; time.Since(programmed) < 3*time.Second || i < 5; i++ {
		status, body, ready := readyState(t, inst)
		if status != 503 || ready != 0 || !strings.Contains(body, "return path") {
			t.Fatalf("without BIRD, %v after programming: /readyz %d %q, sllbrd_ready %v; want 503 naming the return path and 0",
				time.Since(programmed).Round(time.Millisecond), status, body, ready)
		}
		if reasons := strings.Split(strings.TrimSpace(body), "\n"); len(reasons) != 1 {
			t.Errorf("without BIRD: /readyz gives %d reasons, want only the return path's: %q", len(reasons), body)
		}
		if up := sessionsUp(t, inst); up != 0 {
			t.Fatalf("without BIRD: %v BGP sessions up", up)
		}
		for _, g := range gw {
			if returnPathVia(t, l, g) {
				t.Fatalf("without BIRD: the return path goes via %v", g)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	_, body, _ := readyState(t, inst)
	table := returnTable(t, l)
	if strings.Count(table, "blackhole default") != 2 {
		t.Errorf("without BIRD: the return table does not hold a blackhole of each family:\n%s", table)
	}
	t.Logf("without BIRD: programmed, not ready for %v: %q; return table:\n%s", time.Since(programmed).Round(time.Millisecond),
		strings.TrimSpace(body), table)

	// BIRD starts: ready once both families' gateways are in the return path.
	cfg := l.DefaultBIRDConfig()
	cfg.BFD = seedBFD()
	birdStart := time.Now()
	b := startBIRD(t, l, cfg)
	birdUp := time.Since(birdStart)
	var status int
	var ready float64
	d := waitSince(t, birdStart, 90*time.Second, "ready after BIRD started", func() bool {
		status, body, ready = readyState(t, inst)
		return status == 200 && ready == 1
	})
	if strings.TrimSpace(body) != "ok" {
		t.Errorf("ready: /readyz body %q, want ok without the return path's reason", body)
	}
	for _, g := range gw {
		if !returnPathVia(t, l, g) {
			t.Errorf("ready, but the return path does not go via %v:\n%s", g, returnTable(t, l))
		}
	}
	t.Logf("BIRD started (up in %v): sllbrd ready %v after BIRD's start, %d BGP sessions up; return table:\n%s",
		birdUp.Round(time.Millisecond), d.Round(time.Millisecond), int(sessionsUp(t, inst)), returnTable(t, l))

	// BIRD stops: the sessions go down and the gateways leave the return
	// path, but sllbrd stays ready.
	stopped := time.Now()
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	var bgpDown, pathEmpty time.Duration
	for time.Since(stopped) < 3*time.Second || bgpDown == 0 || pathEmpty == 0 {
		elapsed := time.Since(stopped)
		if elapsed > 30*time.Second {
			t.Fatalf("BIRD stopped %v ago: BGP sessions down after %v, return path without gateways after %v (0: not yet)", elapsed, bgpDown, pathEmpty)
		}
		if status, body, ready := readyState(t, inst); status != 200 || ready != 1 {
			t.Fatalf("BIRD stopped %v ago: /readyz %d %q, sllbrd_ready %v; want 200 and 1 (latched)", elapsed.Round(time.Millisecond), status, body, ready)
		}
		if bgpDown == 0 && sessionsUp(t, inst) == 0 {
			bgpDown = elapsed
		}
		if pathEmpty == 0 && !returnPathVia(t, l, gw[0]) && !returnPathVia(t, l, gw[1]) {
			pathEmpty = elapsed
		}
		time.Sleep(200 * time.Millisecond)
	}
	if status, body, ready := readyState(t, inst); status != 200 || ready != 1 {
		t.Fatalf("BIRD stopped, both gateways out of the return path: /readyz %d %q, sllbrd_ready %v; want 200 and 1 (latched)", status, body, ready)
	}
	t.Logf("BIRD stopped: BGP sessions down after %v, both gateways out of the return path after %v, still ready %v later",
		bgpDown.Round(time.Millisecond), pathEmpty.Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
}

// startUnready writes cfg, starts sllbrd in lb1 and waits until it has
// programmed generation 1, ready or not (startInstances waits for ready).
// It returns the manifests' directory and the instance.
func startUnready(t *testing.T, l *lab.Lab, cfg e2e.Config) (string, *e2e.Instance) {
	t.Helper()
	dir := t.TempDir()
	if err := e2e.Write(dir, cfg); err != nil {
		t.Fatal(err)
	}
	inst, err := e2e.Start(l, lab.LBName(1), sllbrdBinary, dir, dataplaneArgs(l, "--queues", "2")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logTail(t, inst) })
	d := waitFor(t, 30*time.Second, "generation 1 programmed", func() bool {
		select {
		case <-inst.Proc.Done():
			t.Fatalf("sllbrd exited: %v (log %s)", inst.Proc.Err(), inst.Proc.LogPath)
		default:
		}
		v, ok, err := inst.Metric("sllbrd_config_last_applied_generation")
		return err == nil && ok && v >= 1
	})
	t.Logf("sllbrd programmed generation 1 %v after its start", d.Round(time.Millisecond))
	return dir, inst
}

// readyState returns /readyz's status and body and sllbrd_ready.
func readyState(t *testing.T, inst *e2e.Instance) (status int, body string, ready float64) {
	t.Helper()
	status, body, err := inst.Get("/readyz")
	if err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	ready, ok, err := inst.Metric("sllbrd_ready ")
	if err != nil || !ok {
		t.Fatalf("sllbrd_ready: found %v, err %v", ok, err)
	}
	return status, body, ready
}

// sessionsUp returns how many BGP sessions sllbrd has Established.
func sessionsUp(t *testing.T, inst *e2e.Instance) float64 {
	t.Helper()
	v, ok, err := inst.Metric("sllbrd_bgp_session_up{")
	if err != nil || !ok {
		t.Fatalf("sllbrd_bgp_session_up: found %v, err %v", ok, err)
	}
	return v
}

// returnTable lists lb1's return table, both families.
func returnTable(t *testing.T, l *lab.Lab) string {
	table := fmt.Sprint(dataplane.ReturnTable)
	return exec1(t, l, lab.LBName(1), "ip", "-4", "route", "show", "table", table) +
		exec1(t, l, lab.LBName(1), "ip", "-6", "route", "show", "table", table)
}
