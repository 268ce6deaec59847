package main

import (
	"context"
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

// TestIntegrationRestartKeepsTheReturnPath: sllbrd, its gateways learned
// through BGP from BIRD, is killed (a crash) and started again at once.
// The targets may still send it their replies (the controller takes
// seconds to take it out of their next hops, and none does while no
// controller leads): the new instance keeps the return route the previous
// one left until its own sessions are up, so the route via each gateway
// never leaves the return table, as the kernel's own route notifications
// show, and no packet to a VIP fails the reverse-path check.
func TestIntegrationRestartKeepsTheReturnPath(t *testing.T) {
	require.Programs(t, "ip")
	l := labSetup(t, 1)
	cfg := l.DefaultBIRDConfig()
	cfg.BFD = seedBFD()
	startBIRD(t, l, cfg)
	dir, insts := startInstances(t, l, e2e.Config{Routers: seedRouters, Services: allTargets, Routes: webRoute}, 1)
	lb := []netip.Addr{lab.LBGatewaySide(1).V4.Addr(), lab.LBGatewaySide(1).V6.Addr()}
	gw := []netip.Addr{lab.GatewayAddrs().V4.Addr(), lab.GatewayAddrs().V6.Addr()}
	vips := []netip.Addr{vip4, vip6}
	for i := range gw {
		waitFor(t, 20*time.Second, "return path via the gateway", func() bool { return returnPathVia(t, l, gw[i]) })
		waitFor(t, 20*time.Second, fmt.Sprintf("BIRD routes %v via sllbrd", vips[i]), func() bool { return gwRoutes(t, l, vips[i], lb[i]) })
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mon := monitorRoutes(ctx, t, l, lab.LBName(1))
	rpDrops := tcpExt(t, l, lab.LBName(1), "IPReversePathFilter")
	if err := insts[0].Proc.Kill(); err != nil {
		t.Fatal(err)
	}
	inst, err := e2e.Start(l, lab.LBName(1), sllbrdBinary, dir, dataplaneArgs(l, "--queues", "2")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logTail(t, inst) })
	restarted := time.Now()
	waitGeneration(t, inst, 1)
	d := waitSince(t, restarted, 20*time.Second, "both BGP sessions of the new instance up", func() bool { return sessionsUp(t, inst) == 2 })
	t.Logf("the new instance's BGP sessions were up %v after its start", d.Round(time.Millisecond))
	time.Sleep(time.Second) // its gateways are programmed, the adopted ones released
	cancel()
	events := mon.lines()

	table := fmt.Sprintf("table %d ", dataplane.ReturnTable)
	for _, line := range events {
		_, r, _ := strings.Cut(line, "] ")
		if strings.HasPrefix(r, "Deleted ") && strings.Contains(r, table) {
			t.Errorf("the return table lost a route through the restart: %s", line)
		}
	}
	for i := range gw {
		if !returnPathVia(t, l, gw[i]) {
			t.Errorf("no return path via %v after the restart", gw[i])
		}
	}
	if d := tcpExt(t, l, lab.LBName(1), "IPReversePathFilter") - rpDrops; d != 0 {
		t.Errorf("the SLLBR's kernel dropped %d packets to a VIP in its reverse-path check through the restart", d)
	}
	if !t.Failed() {
		t.Logf("the return table kept its routes through the restart (%d route notifications in the SLLBR)", len(events))
	}
}
