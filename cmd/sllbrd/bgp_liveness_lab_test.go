package main

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// TestIntegrationLivenessWithdrawsVIPs: two SLLBRs announce the VIPs to BIRD
// (ECMP over both). When lb1's own link to the targets breaks, its probes
// find every endpoint dead, its Services have no live endpoint, and it
// withdraws the VIPs: BIRD routes them through lb2 alone, and every flow
// answered is answered by the target it reached before (the replies that
// the targets route back through lb1 are lost: measured, and all answered
// once the targets' return routes leave lb1 out). When the link is back,
// lb1 announces them again once the endpoints answered for the hold-down.
func TestIntegrationLivenessWithdrawsVIPs(t *testing.T) {
	l := labSetup(t, 2)
	cfg := l.DefaultBIRDConfig()
	cfg.BFD = seedBFD()
	startBIRD(t, l, cfg)
	_, insts := startInstances(t, l, e2e.Config{Routers: seedRouters, Services: allTargets, Routes: webRoute}, 1, 2)
	vips := []netip.Addr{vip4, vip6}
	for lb := 1; lb <= 2; lb++ {
		for _, vip := range vips {
			waitFor(t, 30*time.Second, fmt.Sprintf("BIRD routes %v via lb%d", vip, lb), func() bool { return gwRoutes(t, l, vip, lab.LBGatewaySide(lb).For(vip)) })
		}
	}
	base := map[netip.Addr]map[lab.Flow]string{}
	for _, vip := range vips {
		base[vip] = flows(t, l, lab.FlowOptions{VIP: vip, Port: 5000, Count: 100, SrcPortBase: 45000})
	}

	port := lab.LBName(1) + "-" + lab.TargetLink
	cutAt := time.Now()
	exec1(t, l, lab.SwitchNode, "ip", "link", "set", port, "down")
	t.Cleanup(func() { _, _ = l.Exec(t.Context(), lab.SwitchNode, "ip", "link", "set", port, "up") })
	for _, vip := range vips {
		lb1 := lab.LBGatewaySide(1).For(vip)
		d := waitSince(t, cutAt, labDetection+labInterval+3*time.Second, fmt.Sprintf("BIRD withdraws %v via lb1", vip),
			func() bool { return !gwRoutes(t, l, vip, lb1) })
		t.Logf("lb1's link to the targets down: BIRD's route to %v via lb1 gone after %v (detection %v: %.2f ×)", vip, d.Round(time.Millisecond),
			labDetection, d.Seconds()/labDetection.Seconds())
		if !gwRoutes(t, l, vip, lab.LBGatewaySide(2).For(vip)) {
			t.Errorf("BIRD has no route to %v via lb2", vip)
		}
	}
	if v, _, err := insts[0].Metric(`sllbrd_liveness_probed_addresses{state="dead"}`); err != nil || v != 6 {
		t.Errorf("lb1: %v addresses dead (%v), want all 6", v, err)
	}
	// Every request now goes through lb2. The targets still send their
	// replies over both SLLBRs (their return routes list every SLLBR pod,
	// and lb1 stays ready): those through lb1 are lost. With lb1 out of
	// their return routes, every flow is answered, by its target.
	for _, returnVia := range [][]int{{1, 2}, {2}} {
		setReturnRoutes(t, l, returnVia...)
		for _, vip := range vips {
			before, _, _ := insts[0].Metric(`sllbrd_packets_total{reason="balanced"}`)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			got, err := l.Flows(ctx, lab.FlowOptions{VIP: vip, Port: 5000, Count: 100, SrcPortBase: 45000, Attempts: 2, Timeout: 300 * time.Millisecond})
			cancel()
			after, _, _ := insts[0].Metric(`sllbrd_packets_total{reason="balanced"}`)
			if after != before {
				t.Errorf("%v: lb1 balanced %v packets after withdrawing the VIPs", vip, after-before)
			}
			for f, tg := range got {
				if tg != base[vip][f] {
					t.Errorf("%v: flow %v reached %s, not %s", vip, f, tg, base[vip][f])
				}
			}
			t.Logf("VIPs withdrawn by lb1, targets' return routes via lb%v: %v: %d of %d flows answered, each by its target (%v)",
				returnVia, vip, len(got), len(base[vip]), err)
			if len(returnVia) == 1 && err != nil {
				t.Errorf("%v: %v", vip, err)
			}
		}
	}
	setReturnRoutes(t, l, 1, 2)

	upAt := time.Now()
	exec1(t, l, lab.SwitchNode, "ip", "link", "set", port, "up")
	// Each address comes back a hold-down after its own first reply, which
	// comes at its next probe once the link-layer address is resolved
	// again. lb1 announces a VIP again with the first live endpoint of its
	// family; its table is complete with the last.
	var firstAlive, allAlive time.Duration
	announced := map[netip.Addr]time.Duration{}
	for deadline := upAt.Add(labHoldDown + 10*time.Second); allAlive == 0 || len(announced) < len(vips); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("lb1's link back: after %v, first endpoint alive after %v, all after %v, VIPs announced again: %v", time.Since(upAt), firstAlive, allAlive, announced)
		}
		elapsed := time.Since(upAt)
		n, _, err := insts[0].Metric(`sllbrd_liveness_probed_addresses{state="alive"}`)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 && firstAlive == 0 {
			firstAlive = elapsed
		}
		if n == 6 && allAlive == 0 {
			allAlive = elapsed
		}
		for _, vip := range vips {
			if _, ok := announced[vip]; !ok && gwRoutes(t, l, vip, lab.LBGatewaySide(1).For(vip)) {
				announced[vip] = elapsed
			}
		}
	}
	t.Logf("lb1's link back: the first of its 6 endpoint addresses alive again after %v, the last after %v (hold-down %v); BIRD routes the VIPs via lb1 again after %v",
		firstAlive.Round(time.Millisecond), allAlive.Round(time.Millisecond), labHoldDown, announced)
	for vip, d := range announced {
		if d < labHoldDown {
			t.Errorf("%v announced again %v after the link came back, before the hold-down %v", vip, d, labHoldDown)
		}
	}
	if firstAlive < labHoldDown || allAlive > labHoldDown+2*time.Second {
		t.Errorf("endpoints alive again between %v and %v after the link, want from the hold-down %v to 2 s later", firstAlive, allAlive, labHoldDown)
	}
	waitFor(t, 5*time.Second, "lb1's tables complete", func() bool {
		_, svc := showEndpoint(t, insts[0], "t1")
		return svc.IPv4.ActiveEndpoints == 3 && svc.IPv6.ActiveEndpoints == 3
	})
	for _, vip := range vips {
		if got := flows(t, l, lab.FlowOptions{VIP: vip, Port: 5000, Count: 100, SrcPortBase: 45000}); !maps.Equal(got, base[vip]) {
			t.Errorf("%v through both again: %d of %d flows reached another target", vip, differing(base[vip], got), len(got))
		}
	}
}

// setReturnRoutes points every target's return route (table
// lab.SourceTable) at the given LBs, as the target side would.
func setReturnRoutes(t *testing.T, l *lab.Lab, lbs ...int) {
	t.Helper()
	for _, tg := range l.Targets() {
		for _, fam := range []string{"-4", "-6"} {
			args := []string{"ip", fam, "route", "replace", "default", "table", fmt.Sprint(lab.SourceTable)}
			for _, lb := range lbs {
				hop := lab.LBTargetSide(lb).V4.Addr()
				if fam == "-6" {
					hop = lab.LBTargetSide(lb).V6.Addr()
				}
				if len(lbs) > 1 {
					args = append(args, "nexthop")
				}
				args = append(args, "via", hop.String(), "dev", lab.TargetLink)
			}
			exec1(t, l, tg, args...)
		}
	}
}
