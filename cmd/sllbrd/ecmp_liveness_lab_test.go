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
)

// TestIntegrationLivenessTwoSLLBRs: two SLLBRs that decide alone. When a
// target dies for both, its flows land on the same new target whichever
// SLLBR carries them, and no other flow moves. When only one SLLBR loses
// the target (its frames dropped by the target), the flows through that
// SLLBR move as before while those through the other keep going to the
// target: measured and reported (docs/liveness.md).
func TestIntegrationLivenessTwoSLLBRs(t *testing.T) {
	l := dataplaneLab(t, 2, dataplaneKernel)
	_, insts := startSllbrd(t, l, allTargets, webRoute, 1, 2)
	for _, inst := range insts {
		waitAlive(t, inst, "t2", true)
	}
	base := baselineFlows(t, l, 43000)

	linkDown.apply(t, l, "t2")
	for _, inst := range insts {
		waitAlive(t, inst, "t2", false)
	}
	via1, via2 := flowsVia(t, l, 1), flowsVia(t, l, 2)
	for i, fam := range []string{"ipv4", "ipv6"} {
		if n := differing(via1[i], via2[i]); n != 0 {
			t.Errorf("t2 dead for both, %s: %d of %d flows reached another target through lb2 than through lb1", fam, n, len(via1[i]))
		}
		moved, needless := checkOnlyMoved(t, fam+", t2 dead for both, via lb1", base[i], via1[i], "t2")
		for _, inst := range insts {
			checkNeedless(t, inst, fam+", t2 dead for both", needless, len(base[i])-sum(moved))
		}
		t.Logf("t2 dead for both SLLBRs, %s: its %d flows moved to %v, the same through lb1 and lb2; of the other %d, %d moved needlessly (Maglev), the same through both",
			fam, sum(moved), moved, len(base[i])-sum(moved), needless)
	}
	for _, inst := range insts {
		checkExplainAgrees(t, inst, base, via1)
	}
	linkDown.restore(t, l, "t2")
	for _, inst := range insts {
		waitAlive(t, inst, "t2", true)
	}
	for i, got := range flowsVia(t, l, 2) {
		if n := differing(base[i], got); n != 0 {
			t.Errorf("t2 back: %d flows do not reach the target they reached at the start", n)
		}
	}

	// Asymmetric: t2 drops every frame from lb1 only.
	dropIngress(t, l, "t2", "ether saddr "+linkMAC(t, l, lab.LBName(1), lab.TargetLink))
	waitAlive(t, insts[0], "t2", false)
	time.Sleep(labDetection + labInterval)
	waitAlive(t, insts[1], "t2", true) // still
	for i, got := range flowsVia(t, l, 1) {
		fam := []string{"ipv4", "ipv6"}[i]
		if n := differing(via1[i], got); n != 0 {
			t.Errorf("t2 dead for lb1 only, %s: %d flows through lb1 reached another target than when t2 was dead for both", fam, n)
		}
	}
	t.Logf("t2 dead for lb1 only: through lb1, t2's flows moved as when it was dead for both, the others stayed")
	// Right after, t2 still has lb1's link-layer address and its replies
	// through lb1 go out; once its neighbour entry for lb1 expires it cannot
	// learn it again (lb1's answers are dropped): flushed here, as it is
	// after about a minute.
	for _, phase := range []string{"right after", "t2's neighbour entries expired"} {
		if phase != "right after" {
			exec1(t, l, "t2", "ip", "neigh", "flush", "dev", lab.TargetLink)
		}
		for i, vip := range []netip.Addr{vip4, vip6} {
			checkAsymmetric(t, l, phase, []string{"ipv4", "ipv6"}[i], vip, base[i], via1[i])
		}
	}
}

// checkAsymmetric runs the baseline's flows of vip through lb2 alone, then
// through both LBs (ECMP), while t2 is dead for lb1 only, and reports
// where t2's flows land; the other targets' flows reach their target (or,
// moved needlessly by lb1's table, where they went when t2 was dead for
// both), and t2's flows never reach another target than through lb1.
func checkAsymmetric(t *testing.T, l *lab.Lab, phase, fam string, vip netip.Addr, base, deadForBoth map[lab.Flow]string) {
	t.Helper()
	for _, via := range [][]int{{2}, {1, 2}} {
		what := fmt.Sprintf("t2 dead for lb1 only (%s), %s, gateway routes via lb%v", phase, fam, via)
		got := flowsAllowingLoss(t, l, vip, via...)
		var onT2, moved, lost, others, othersLost int
		for f, was := range base {
			now, ok := got[f]
			switch {
			case was != "t2" && ok && now != was && now != deadForBoth[f]:
				t.Errorf("%s: flow %v of %s reached %s", what, f, was, now)
			case was != "t2" && !ok:
				othersLost++
			case was != "t2":
				others++
			case !ok:
				lost++
			case now == "t2":
				onT2++
			default:
				moved++
				if now != deadForBoth[f] {
					t.Errorf("%s: flow %v moved to %s, not to %s as through lb1", what, f, now, deadForBoth[f])
				}
			}
		}
		if len(via) == 1 && moved != 0 {
			t.Errorf("%s: %d of t2's flows moved", what, moved)
		}
		if othersLost != 0 {
			t.Errorf("%s: %d flows of the other targets unanswered", what, othersLost)
		}
		t.Logf("%s: of t2's %d flows %d answered by t2, %d moved (as through lb1), %d unanswered; the other %d flows reached their target",
			what, onT2+moved+lost, onT2, moved, lost, others)
	}
}

// flowsVia routes the VIPs through LB lb alone and runs the baseline's flows,
// every one of which must be answered.
func flowsVia(t *testing.T, l *lab.Lab, lb int) []map[lab.Flow]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.RouteVIPsVia(ctx, lb); err != nil {
		t.Fatal(err)
	}
	return baselineFlows(t, l, 43000)
}

// flowsAllowingLoss routes the VIPs through the LBs (ECMP when several) and
// runs the baseline's flows of vip, returning those answered.
func flowsAllowingLoss(t *testing.T, l *lab.Lab, vip netip.Addr, lbs ...int) map[lab.Flow]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.RouteVIPsVia(ctx, lbs...); err != nil {
		t.Fatal(err)
	}
	got, err := l.Flows(ctx, lab.FlowOptions{VIP: vip, Port: 5000, Count: 120, SrcPortBase: 43000, Attempts: 2, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Logf("via %v: %v", lbs, err)
	}
	return got
}

// checkOnlyMoved checks that none of the flows of before reaches dead
// after; it returns where dead's flows went and how many others moved
// (Maglev's needless moves, which the caller checks).
func checkOnlyMoved(t *testing.T, what string, before, after map[lab.Flow]string, dead string) (moved map[string]int, needless int) {
	t.Helper()
	moved = map[string]int{}
	for f, was := range before {
		now := after[f]
		switch {
		case now == dead:
			t.Errorf("%s: flow %v still reaches %s", what, f, dead)
		case was == dead:
			moved[now]++
		case now != was:
			needless++
		}
	}
	return moved, needless
}

// checkExplainAgrees: inst's explain names where each flow went.
func checkExplainAgrees(t *testing.T, inst *e2e.Instance, base, now []map[lab.Flow]string) {
	t.Helper()
	for i := range base {
		n := 0
		for f, was := range base[i] {
			if was == now[i][f] && (was != "t2" || n == 8) {
				continue // explain every flow that moved, but only 8 of t2's
			}
			if was == "t2" {
				n++
			}
			if got := explainTarget(t, inst, f.Dst.Addr(), f.Src.Port()); got != now[i][f] {
				t.Errorf("%s: explain sends %v to %s; it went to %s", inst.Node, f, got, now[i][f])
			}
		}
	}
}

// linkMAC returns the hardware address of a node's interface.
func linkMAC(t *testing.T, l *lab.Lab, node, link string) string {
	t.Helper()
	var links []struct {
		Address string `json:"address"`
	}
	out := exec1(t, l, node, "ip", "-j", "link", "show", link)
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 || links[0].Address == "" {
		t.Fatalf("%s %s: %v: %s", node, link, err, out)
	}
	return links[0].Address
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
