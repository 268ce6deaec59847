package main

import (
	"context"
	"flag"
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

var (
	scaleEndpoints = flag.Int("scale.endpoints", 1000, "TestIntegrationLivenessScale: endpoints of service-a, dual-stack (20..1000)")
	scaleRest      = flag.Duration("scale.rest", 10*time.Second, "TestIntegrationLivenessScale: how long sllbrd's CPU at rest is measured, with liveness on and off")
	scaleNeighKeep = flag.Bool("scale.keep-neigh-limits", false, "TestIntegrationLivenessScale: leave the host's neighbour table limits as they are (see neighbourRoom)")
)

// scaleApplySlack is what the scale test allows between an endpoint found
// dead and its flows answered elsewhere: one apply of the reconcile loop
// rebuilding the tables of 1,000 endpoints and rewriting a tenth of the
// kernel's entries, on a shared, loaded 2-core machine.
const scaleApplySlack = time.Second

// TestIntegrationLivenessScale: one SLLBR (kernel dataplane) balancing a
// Service of -scale.endpoints dual-stack endpoints (2,000 addresses probed
// at the default 200 ms × 4) to the lab's three targets, many addresses
// each. It measures how long sllbrd takes to program the Service and find
// every address alive, that show services and show routes answer within
// scaleShowLimit, and its CPU at rest with liveness on, with the policy
// routing's skip rules deleted (which must cost more) and with liveness
// off. Then
// t2's link goes down, taking a tenth of the endpoints with it. The prober
// finds their addresses dead over up to an interval (each at its own
// phase), so several applies take them out; the test checks that exactly
// t2's addresses are found dead within the prober's bounds; that until the
// first is, every flow is answered by its own target; that each of t2's
// flows is answered elsewhere within the detection time, an interval and
// scaleApplySlack; that from the last apply on, every flow is answered by
// the target `sllbrd explain` names and explain's endpoint is the one
// Maglev's table (package maglev) holds for the flow's hash with t2's
// endpoints out; and that sllbrd counted at least the entries of t2's
// endpoints as moved. Then t2 comes back: after the last apply every flow
// is answered by its own target again. It logs the detection, the applies
// (from the prober's change to the kernel programmed), the needless moves
// against Maglev's one-step figure, the flows that moved more than once
// while the applies ran. The host's neighbour tables must hold the
// endpoints: the test raises their limits for its run (neighbourRoom).
func TestIntegrationLivenessScale(t *testing.T) {
	n := *scaleEndpoints
	l, checkNoOverflow := newScaleLab(t, n)
	dir := t.TempDir()
	if err := writeScaleManifests(dir, n, ""); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	inst, programmed := startScaleSllbrd(t, l, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.RouteVIPsVia(ctx, 1); err != nil {
		t.Fatal(err)
	}
	waitProbed(t, inst, 2*n, 0, 30*time.Second)
	t.Logf("%d endpoints, both families: programmed %v after start, every address alive after %v",
		n, programmed.Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	ref := newScaleReference(t, n)
	checkScaleLookup(t, inst, ref, n)
	checkScaleShow(t, inst, n)

	on := measureSllbrdRest(t, inst, *scaleRest)
	want := float64(2*n) / labInterval.Seconds()
	if on.probes < want*0.95 || on.probes > want*1.05 {
		t.Errorf("at rest: %.0f probes/s, want %.0f (one per address per interval)", on.probes, want)
	}
	noSkip := measureWithoutSkipRules(t, l, inst, *scaleRest)
	// A figure for docs/performance.md, not a check: CPU is shown by
	// benchmarks (dataplane/route BenchmarkForward), never by a timed test.
	t.Logf("sllbrd at rest with %d endpoint addresses probed: %.1f m of CPU with the skip rules, %.1f m without them (%.2f x)",
		2*n, on.milli, noSkip.milli, on.milli/noSkip.milli)

	// t2 dies: its flows move to the targets explain names, nothing else.
	served := make([]map[lab.Flow]string, 0, 2)
	for _, vip := range []netip.Addr{vip4, vip6} {
		served = append(served, flows(t, l, lab.FlowOptions{VIP: vip, Port: 5000, Count: 300, SrcPortBase: 43000}))
	}
	s := startStream(t, l, streamFlowsOf(served, "t2", 12), 5000)
	time.Sleep(300 * time.Millisecond)
	faultAt := time.Now()
	linkDown.apply(t, l, "t2")
	waitProbed(t, inst, 2*(n-ref.victims), 2*ref.victims, labDetection+labInterval+10*time.Second)
	time.Sleep(time.Second) // the last apply done, the flows answered where it sends them
	death := readScaleApplies(t, inst, false, faultAt)
	death.log(t, "t2's link down", faultAt, labDetection)
	// From its last reply, which came up to an interval before the fault.
	if lo, hi := labDetection-labInterval-50*time.Millisecond, labDetection+labInterval+scaleApplySlack; death.first.Sub(faultAt) < lo || death.last.Sub(faultAt) > hi {
		t.Errorf("t2's addresses found dead %v to %v after the fault, want within [%v, %v]", death.first.Sub(faultAt), death.last.Sub(faultAt), lo, hi)
	}
	checkScaleLookup(t, inst, ref, n-ref.victims)
	final := explainScaleFlows(t, inst, ref.live, n, s)
	checkScaleDead(t, inst, ref, n, 1)

	restoredAt := time.Now()
	linkDown.restore(t, l, "t2")
	waitProbed(t, inst, 2*n, 0, labHoldDown+10*time.Second)
	time.Sleep(time.Second)
	back := readScaleApplies(t, inst, true, restoredAt)
	back.log(t, "t2's link up", restoredAt, labHoldDown)
	s.close()
	answers, errs := s.snapshot()
	defer debugAnswers(t, s, answers, faultAt)
	for _, err := range errs {
		t.Error(err)
	}
	checkScaleFlows(t, s, answers, faultAt, restoredAt, death, back, final)
	checkScaleLookup(t, inst, ref, n)
	for i, tg := range explainScaleFlows(t, inst, ref.all, n, s) {
		if tg != s.flows[i].start {
			t.Errorf("flow from port %d to %v: explain says %s after t2 came back, it started on %s", s.flows[i].port, s.flows[i].vip, tg, s.flows[i].start)
		}
	}
	checkScaleDead(t, inst, ref, n, 2)

	// The same at rest with liveness off: what probing costs.
	gen, _, err := inst.Metric("sllbrd_config_last_applied_generation")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeScaleManifests(dir, n, "off"); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, inst, uint64(gen)+1)
	waitProbed(t, inst, 0, 0, 10*time.Second)
	off := measureSllbrdRest(t, inst, *scaleRest)
	t.Logf("sllbrd at rest with %d endpoint addresses probed: %.1f m of CPU (%.0f probes/s); with liveness off: %.1f m; probing: %.1f m, %.1f µs per probe and its reply",
		2*n, on.milli, on.probes, off.milli, on.milli-off.milli, 1000*(on.milli-off.milli)/on.probes)

	checkNoOverflow()
}

// waitProbed waits until inst probes alive addresses alive and dead dead.
func waitProbed(t *testing.T, inst *e2e.Instance, alive, dead int, within time.Duration) {
	t.Helper()
	var a, d float64
	var err error
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		a, _, err = inst.Metric(`sllbrd_liveness_probed_addresses{state="alive"}`)
		if err == nil {
			d, _, err = inst.Metric(`sllbrd_liveness_probed_addresses{state="dead"}`)
		}
		if err == nil && int(a) == alive && int(d) == dead {
			return
		}
	}
	t.Fatalf("%s: %v probed addresses alive and %v dead (%v), want %d and %d", inst.Node, a, d, err, alive, dead)
}

// sllbrdRest is sllbrd's cost over a window at rest.
type sllbrdRest struct {
	milli  float64 // CPU, thousandths of a core
	probes float64 // probes sent a second
}

// measureSllbrdRest reads sllbrd's CPU (/proc/PID/stat: user and system;
// the latter includes the softirq work of the targets' replies that runs
// in its context) and probes sent over window. The metrics are read
// outside the window: a scrape of 2,000 addresses' series is work too.
func measureSllbrdRest(t *testing.T, inst *e2e.Instance, window time.Duration) sllbrdRest {
	t.Helper()
	sent0, _, err := inst.Metric("sllbrd_liveness_probes_sent_total")
	read0 := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the scrape's garbage collected
	p0, err := lab.ReadProcStats(inst.Proc.PID)
	t0 := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(window)
	p1, err := lab.ReadProcStats(inst.Proc.PID)
	w := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	sent1, _, err := inst.Metric("sllbrd_liveness_probes_sent_total")
	if err != nil {
		t.Fatal(err)
	}
	r := sllbrdRest{milli: 1000 * float64(p1.CPU()-p0.CPU()) / float64(w), probes: (sent1 - sent0) / time.Since(read0).Seconds()}
	t.Logf("sllbrd at rest for %v: CPU %.1f m (user %v, system %v), %.0f probes/s, RSS %.1f MiB (anonymous %.1f MiB)",
		w.Round(time.Millisecond), r.milli, (p1.User - p0.User).Round(time.Millisecond), (p1.System - p0.System).Round(time.Millisecond),
		r.probes, float64(p1.RSS)/(1<<20), float64(p1.RSSAnon)/(1<<20))
	return r
}
