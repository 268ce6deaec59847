package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

// TestIntegrationEndpointChurnNeverMisroutes: while UDP floods (IPv4 and
// IPv6) run through the LB, target t2 is removed from and re-added to the
// Service again and again; in every cycle datagrams whose first fragment was
// balanced before the removal send their later fragments after it (they
// follow the remembered mark). In the LB, no packet carrying a mark may be
// routed anywhere but to a lab target (never by the main table), counted
// exactly by nftables; what routing drops (the catch-all blackhole) is
// counted too and must be nothing either: the removed endpoint's routes
// outlive the fragments and verdicts that carry its mark.
// Half of the cycles re-add t2 at once (its mark comes back), half only
// after the removed mark's rules are gone (the grace period has ended).
func TestIntegrationEndpointChurnNeverMisroutes(t *testing.T) {
	forEachDataplane(t, testIntegrationEndpointChurnNeverMisroutes)
}

func testIntegrationEndpointChurnNeverMisroutes(t *testing.T, mode string) {
	require.Lab(t)
	l := dataplaneLab(t, 1, mode)
	port := l.Options().BlastPort
	routes := []e2e.Route{{Name: "churn", Service: "service-a", Priority: 10,
		Fields: fmt.Sprintf(`protocols: [UDP], destinationPorts: ["%d"]`, port)}}
	ids := map[int]int{1: 0, 2: 1, 3: 2} // removing t2 leaves t1's and t3's slots alone
	all := []e2e.Service{{Name: "service-a", Targets: []int{1, 2, 3}, IDs: ids}}
	without2 := []e2e.Service{{Name: "service-a", Targets: []int{1, 3}, IDs: ids}}
	dir, insts := startSllbrd(t, l, all, routes, 1)
	lb := lab.LBName(1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := l.InstallRouteAudit(ctx, lb); err != nil {
		t.Fatal(err)
	}
	followedBefore, _, err := insts[0].Metric(`sllbrd_packets_total{reason="fragment_followed"}`)
	if err != nil {
		t.Fatal(err)
	}

	stopFloods := startFloods(t, ctx, l, lab.BlastOptions{Rate: 3000, Flows: 512, Duration: 50 * time.Second})
	defer stopFloods()

	const cycles = 6
	gen := uint64(1)
	for c := range cycles {
		firsts, laters := splitDatagrams(c, port)
		if err := l.SendRaw(lab.ClientNode, firsts...); err != nil {
			t.Fatal(err)
		}
		if err := e2e.WriteManifests(dir, without2, routes); err != nil {
			t.Fatal(err)
		}
		gen++
		waitGeneration(t, insts[0], gen)
		if err := l.SendRaw(lab.ClientNode, laters...); err != nil {
			t.Fatal(err)
		}
		if c%2 == 1 { // let the grace period end: t2's mark loses its rules
			waitFor(t, 30*time.Second, "the removed endpoint's fwmark rules deleted", func() bool {
				return markRules(t, l, lb) == 2*2
			})
		}
		if err := e2e.WriteManifests(dir, all, routes); err != nil {
			t.Fatal(err)
		}
		gen++
		waitGeneration(t, insts[0], gen)
	}
	results := stopFloods()
	if t.Failed() {
		return
	}
	audit, err := l.ReadRouteAudit(ctx, lb)
	if err != nil {
		t.Fatal(err)
	}
	followed, _, err := insts[0].Metric(`sllbrd_packets_total{reason="fragment_followed"}`)
	if err != nil {
		t.Fatal(err)
	}
	// The targets' counters count both floods: each result's received
	// numbers are over both families.
	t.Logf("IPv4 flood: %v", results[0])
	t.Logf("IPv6 flood: %v", results[1])
	t.Logf("IPv4 marked packets in %s: %v", lb, audit.V4)
	t.Logf("IPv6 marked packets in %s: %v", lb, audit.V6)
	t.Logf("later fragments that followed their first fragment: %v", followed-followedBefore)
	for fam, m := range map[string]lab.MarkedRouting{"IPv4": audit.V4, "IPv6": audit.V6} {
		if m.Elsewhere != 0 {
			t.Errorf("%s: %d marked packets were routed elsewhere than to a target (main table)", fam, m.Elsewhere)
		}
		if m.ToTargets == 0 {
			t.Errorf("%s: no marked packet reached a target: the flood did not run", fam)
		}
		// The catch-all only drops what carries a mark without a rule; a
		// removed endpoint keeps its rule for the grace period, so later
		// fragments and verdicts decided before the removal still reach it.
		if m.Dropped() != 0 {
			t.Errorf("%s: %d marked packets dropped by routing: a removed endpoint's mark lost its rule within the grace period", fam, m.Dropped())
		}
	}
	for i, r := range results {
		if len(r.PerTarget) != 3 || r.PerTarget[lab.TargetName(1)] == 0 || r.PerTarget[lab.TargetName(3)] == 0 {
			t.Errorf("flood %d did not reach the live targets: %v", i, r)
		}
	}
	if followed-followedBefore == 0 {
		t.Errorf("no later fragment followed its first fragment: the fragment part of the test did not run")
	}
}

// splitDatagrams returns, for cycle c, the first and the later fragments of
// 24 small UDP datagrams per address family to port, each with its own flow.
func splitDatagrams(c int, port uint16) (firsts, laters [][]byte) {
	for _, vip := range []netip.Addr{vip4, vip6} {
		src := lab.ClientAddrs().For(vip)
		for i := range 24 {
			f := testpkt.Flow{Src: src, Dst: vip, Proto: 17, SrcPort: uint16(41000 + 100*c + i), DstPort: port}
			frags := testpkt.Fragments(f, make([]byte, 56), 32, uint32(7000+100*c+i))
			firsts = append(firsts, frags[0])
			laters = append(laters, frags[1:]...)
		}
	}
	return firsts, laters
}

// markRules counts node's per-endpoint rules (fwmark, exact mask, lookup a
// table) over both families.
func markRules(t *testing.T, l *lab.Lab, node string) int {
	t.Helper()
	n := 0
	for _, fam := range []string{"-4", "-6"} {
		out, err := l.Exec(context.Background(), node, "ip", "-j", fam, "rule", "list")
		if err != nil {
			t.Fatal(err)
		}
		var rules []map[string]any
		if err := json.Unmarshal([]byte(out), &rules); err != nil {
			t.Fatalf("ip rule json: %v", err)
		}
		for _, r := range rules {
			_, mark := r["fwmark"]
			_, mask := r["fwmask"]
			_, table := r["table"]
			if mark && !mask && table {
				n++
			}
		}
	}
	return n
}
