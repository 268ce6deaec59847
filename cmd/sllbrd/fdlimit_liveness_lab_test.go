package main

import (
	"testing"
	"time"
)

// TestIntegrationLivenessOutlivesItsProber: a prober that fails (its poll
// is refused while RLIMIT_NOFILE is 0) does not stop sllbrd: it is counted
// and replaced once descriptors are free again, and the new one finds a
// dead target as the first did.
func TestIntegrationLivenessOutlivesItsProber(t *testing.T) {
	l := dataplaneLab(t, 1, dataplaneKernel)
	_, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	inst := insts[0]
	waitAlive(t, inst, "t2", true)
	restore := limitDescriptors(t, inst.Proc.PID)
	time.Sleep(time.Second)
	restore()
	waitFor(t, 15*time.Second, "the failed prober counted", func() bool {
		v, _, err := inst.Metric("sllbrd_liveness_prober_failures_total")
		return err == nil && v >= 1
	})
	sent, _, err := inst.Metric("sllbrd_liveness_probes_sent_total")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "probes sent by the new prober", func() bool {
		v, _, err := inst.Metric("sllbrd_liveness_probes_sent_total")
		return err == nil && v > sent
	})
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
