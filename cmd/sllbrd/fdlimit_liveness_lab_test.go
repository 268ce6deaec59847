package main

import (
	"testing"
	"time"
)

// TestIntegrationLivenessWithoutDescriptors: while RLIMIT_NOFILE is 0 (the
// prober's poll is refused) the prober keeps reading its sockets: no
// target is found dead, no prober fails, probes go on, and afterwards a
// dead target is found as before.
func TestIntegrationLivenessWithoutDescriptors(t *testing.T) {
	l := dataplaneLab(t, 1, dataplaneKernel)
	_, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	inst := insts[0]
	waitAlive(t, inst, "t2", true)
	metric := func(name string) float64 {
		t.Helper()
		v, _, err := inst.Metric(name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	const downs = `sllbrd_endpoint_liveness_transitions_total{direction="down"}`
	sent, recvErrs, down := metric("sllbrd_liveness_probes_sent_total"), metric("sllbrd_liveness_receive_errors_total"), metric(downs)
	restore := limitDescriptors(t, inst.Proc.PID)
	time.Sleep(2 * time.Second) // more than the 800 ms detection
	restore()
	if v := metric("sllbrd_liveness_receive_errors_total"); v <= recvErrs {
		t.Errorf("no failed poll counted under RLIMIT_NOFILE 0 (the test tests nothing): %v", v)
	}
	if v := metric("sllbrd_liveness_prober_failures_total"); v != 0 {
		t.Errorf("%v prober failures, want 0: the prober reads without poll", v)
	}
	if v := metric("sllbrd_liveness_probes_sent_total"); v <= sent {
		t.Errorf("probes sent %v, then %v: the prober stopped", sent, v)
	}
	if v := metric(`sllbrd_liveness_probed_addresses{state="dead"}`); v != 0 || metric(downs) != down {
		t.Errorf("%v addresses dead, %v transitions down (from %v) while out of descriptors", v, metric(downs), down)
	}
	select {
	case <-inst.Proc.Done():
		t.Fatalf("sllbrd exited: %v", inst.Proc.Err())
	default:
	}
	waitAlive(t, inst, "t2", true)
	base := baselineFlows(t, l, 46000)
	linkDown.apply(t, l, "t2")
	t.Cleanup(func() { linkDown.restore(t, l, "t2") })
	waitAlive(t, inst, "t2", false)
	for i, got := range baselineFlows(t, l, 46000) {
		if moved, _ := checkOnlyMoved(t, "t2 dead, new prober", base[i], got, "t2"); sum(moved) == 0 {
			t.Errorf("no flow of t2 among the %d flows", len(got))
		}
	}
}
