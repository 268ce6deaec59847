package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationVIPAnnouncedAfterItsReturnPath: when sllbrd's BGP session
// with BIRD comes up, BIRD's default route and sllbrd's VIPs cross on the
// wire. The gateway routes a VIP to the SLLBR as soon as the announcement
// arrives, so sllbrd must have programmed a gateway of the VIP's family into
// its return table before it announces: until then the kernel drops the
// traffic to the VIP (rp_filter's lookup from the VIP finds only the
// blackhole). First BIRD sends no default route: with its sessions up,
// sllbrd has no return path, and the gateway must never route a VIP to it.
// Then BIRD sends one: the VIPs are routed to the SLLBR once its return
// path is there, and the SLLBR's reverse-path drop counter does not move
// while a ping flood (from before the restart) goes through it. The order
// of the two routes by the kernels' notifications is logged: two monitor
// processes' read times cannot order events less than a scheduling delay
// apart on a loaded machine.
func TestIntegrationVIPAnnouncedAfterItsReturnPath(t *testing.T) {
	require.Programs(t, "ping", "ip")
	l := labSetup(t, 1)
	cfg := l.DefaultBIRDConfig()
	cfg.BFD = seedBFD()
	cfg.NoDefault = true
	noDefault := startBIRD(t, l, cfg)
	lb := []netip.Addr{lab.LBGatewaySide(1).V4.Addr(), lab.LBGatewaySide(1).V6.Addr()}
	gw := []netip.Addr{lab.GatewayAddrs().V4.Addr(), lab.GatewayAddrs().V6.Addr()}
	vips := []netip.Addr{vip4, vip6}
	_, inst := startUnready(t, l, e2e.Config{Routers: seedRouters, Services: allTargets, Routes: webRoute})
	waitFor(t, 20*time.Second, "both BGP sessions up (BIRD sending no default route)", func() bool { return sessionsUp(t, inst) == 2 })
	neverWithin(t, 3*time.Second, "the gateway routes a VIP to an SLLBR that has no return path", func() bool {
		return gwRoutes(t, l, vips[0], lb[0]) || gwRoutes(t, l, vips[1], lb[1])
	})
	for i := range gw {
		if returnPathVia(t, l, gw[i]) {
			t.Fatalf("the return path has %v though BIRD sends no default route", gw[i])
		}
	}
	t.Logf("BGP up without a default route: for 3 s no VIP routed to the SLLBR")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gwMon := monitorRoutes(ctx, t, l, lab.GatewayNode)
	lbMon := monitorRoutes(ctx, t, l, lab.LBName(1))
	rpDrops := tcpExt(t, l, lab.LBName(1), "IPReversePathFilter")
	forwarded := netCounter(t, l, lab.LBName(1), "/proc/net/snmp", "Ip:", "ForwDatagrams")
	var pings sync.WaitGroup
	// Every 200 µs (finer than the window it guards), 300,000 and a
	// minute at most: the test ends it earlier. No deadline (-w): with one,
	// ping ends at the first error (the gateway's unreachable, before the
	// VIP is routed).
	for _, vip := range vips {
		pings.Go(func() {
			out, err := l.Exec(ctx, lab.ClientNode, "ping", "-q", "-n", "-i", "0.0002", "-c", "300000", vip.String())
			if ctx.Err() == nil {
				t.Errorf("ping %v ended before the test ended it: %v\n%s", vip, err, out)
			}
		})
	}
	defer pings.Wait()

	if err := noDefault.Stop(); err != nil {
		t.Fatal(err)
	}
	cfg.NoDefault = false
	startBIRD(t, l, cfg)
	for i := range vips {
		waitFor(t, 30*time.Second, fmt.Sprintf("BIRD routes %v via sllbrd", vips[i]), func() bool { return gwRoutes(t, l, vips[i], lb[i]) })
		waitFor(t, 10*time.Second, "return path via the gateway", func() bool { return returnPathVia(t, l, gw[i]) })
	}
	time.Sleep(time.Second) // the flood goes on through the SLLBR
	cancel()
	pings.Wait()
	gwEvents, lbEvents := gwMon.lines(), lbMon.lines()

	for i, vip := range vips {
		announced, ok := firstRoute(gwEvents, func(r string) bool {
			return strings.HasPrefix(r, vip.String()+" ") && strings.Contains(r, "via "+lb[i].String())
		})
		programmed, ok2 := firstRoute(lbEvents, func(r string) bool {
			return strings.HasPrefix(r, "default via "+gw[i].String()+" ") && strings.Contains(r, fmt.Sprintf("table %d ", dataplane.ReturnTable))
		})
		if ok && ok2 {
			t.Logf("%v: the SLLBR's return route notified %v before the gateway's route to the VIP (by the monitors' read times)", vip, announced.Sub(programmed))
		}
	}
	fwd := netCounter(t, l, lab.LBName(1), "/proc/net/snmp", "Ip:", "ForwDatagrams") - forwarded
	if fwd < 200 {
		t.Fatalf("the SLLBR forwarded %d packets of the flood: the test sent too little through it to show anything", fwd)
	}
	if d := tcpExt(t, l, lab.LBName(1), "IPReversePathFilter") - rpDrops; d != 0 {
		t.Errorf("the SLLBR's kernel dropped %d packets to the VIP in its reverse-path check (it forwarded %d)", d, fwd)
	} else {
		t.Logf("the SLLBR forwarded %d packets of the flood, none dropped by the reverse-path check", fwd)
	}
}

// monitorTime is the timestamp format of `ip -ts monitor`.
const monitorTime = "2006-01-02T15:04:05.000000"

// routeMonitor is `ip -ts monitor route` in a lab namespace, ended with
// its context (or the test).
type routeMonitor struct {
	done chan struct{}
	out  bytes.Buffer
}

func monitorRoutes(ctx context.Context, t *testing.T, l *lab.Lab, node string) *routeMonitor {
	t.Helper()
	m := &routeMonitor{done: make(chan struct{})}
	cmd := exec.CommandContext(ctx, "ip", "-n", l.NS(node), "-ts", "monitor", "route")
	cmd.Stdout = &m.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: ip monitor: %v", node, err)
	}
	go func() { _ = cmd.Wait(); close(m.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-m.done })
	time.Sleep(100 * time.Millisecond) // subscribed before anything the test does next
	return m
}

// lines returns what the monitor printed; it waits for it to end (its
// context cancelled).
func (m *routeMonitor) lines() []string {
	<-m.done
	var out []string
	for s := bufio.NewScanner(&m.out); s.Scan(); {
		out = append(out, s.Text())
	}
	return out
}

// firstRoute returns when the first route notification (not a deletion)
// that match accepts was printed.
func firstRoute(lines []string, match func(route string) bool) (time.Time, bool) {
	for _, line := range lines {
		ts, route, ok := strings.Cut(strings.TrimPrefix(line, "["), "] ")
		if !ok || strings.HasPrefix(route, "Deleted ") || !match(route) {
			continue
		}
		at, err := time.ParseInLocation(monitorTime, ts, time.Local)
		if err != nil {
			continue
		}
		return at, true
	}
	return time.Time{}, false
}
