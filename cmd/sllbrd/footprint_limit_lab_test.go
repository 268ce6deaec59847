package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// After the measurement at rest, sllbrd (manifest files source) is held
// under each of its memory limits in turn, largest first, for
// footprintLimitHold: the memory limit a container could be given. The
// kernel then reclaims the binary's pages the process does not use, and
// reads back from disk (a major fault) every page it needs again.
//
// By default the only limit is footprintSafeLimit, asserted: sllbrd must
// run under it without thrashing. `make footprint` sweeps down to where it
// thrashes (footprintSweep, or the MiB listed in footprintLimitsEnv),
// which is measured, not asserted, and kept out of `make test`: a
// thrashing process reads from disk for seconds, beside other tests.
const (
	footprintSafeLimit = 64 << 20
	footprintLimitsEnv = "SLLBRD_FOOTPRINT_LIMITS" // "sweep", or MiB: "64,48,40"
	// maxFaultRate is the most major faults a second an sllbrd that fits
	// its memory limit may take (the daemon under footprintSafeLimit, and
	// the cluster test's sidecars under theirs); measured 2026-11-26: 0
	// and 0.2 for the daemon, 0 for the sidecars. One that does not fit
	// takes tens to hundreds.
	maxFaultRate = 5
)

var footprintSweep = []uint64{128 << 20, 64 << 20, 48 << 20, 40 << 20, 32 << 20, 24 << 20}

// footprintLimits returns the limits to hold sllbrd under, from
// footprintLimitsEnv.
func footprintLimits(t *testing.T) []uint64 {
	t.Helper()
	env := os.Getenv(footprintLimitsEnv)
	switch env {
	case "":
		return []uint64{footprintSafeLimit}
	case "sweep":
		return footprintSweep
	}
	var limits []uint64
	for f := range strings.SplitSeq(env, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
		if err != nil || n < 8 {
			t.Fatalf("%s: %q is not a limit in MiB (8 or more)", footprintLimitsEnv, f)
		}
		limits = append(limits, n<<20)
	}
	return limits
}

// checkSafeLimit fails the test unless sllbrd ran under footprintSafeLimit
// without thrashing, ready, with its VIPs routed and no session lost.
func checkSafeLimit(t *testing.T, source string, steps []limitStep) {
	t.Helper()
	for _, s := range steps {
		if s.limit != footprintSafeLimit {
			continue
		}
		switch {
		case s.err != nil || s.killed:
			t.Errorf("%s under %d MiB: killed %v, %v", source, s.limit>>20, s.killed, s.err)
		case s.faultRate() > maxFaultRate || s.ready != "true" || !s.announced || s.bfdDown != 0 || s.flaps != 0:
			t.Errorf("%s under %d MiB: %.1f major faults/s (want at most %d), ready %s, VIPs routed %v, BFD down %.0f, BGP flaps %.0f",
				source, s.limit>>20, s.faultRate(), maxFaultRate, s.ready, s.announced, s.bfdDown, s.flaps)
		}
	}
}

const footprintLimitHold = 15 * time.Second

// limitStep is what sllbrd did under one memory limit.
type limitStep struct {
	limit          uint64
	err            error // the kernel could not reclaim down to the limit, or a read failed
	killed         bool  // the process ended during the hold (the OOM killer)
	majorFaults    uint64
	held           time.Duration
	mem            lab.MemStats
	cgroup         lab.CgroupMemStats
	ready          string  // sllbrd_ready at the end of the hold, or why it is not known
	announced      bool    // the gateway still routes both VIPs via sllbrd
	bfdDown, flaps float64 // BFD sessions leaving Up and BGP session flaps during the hold
}

// faultRate is the step's major faults a second.
func (s limitStep) faultRate() float64 { return float64(s.majorFaults) / s.held.Seconds() }

// footprintThrashing is the rate of major faults under a limit at which the
// steps stop going lower: the process spends its time reading its binary
// back from disk.
const footprintThrashing = 50 // per second

// holdUnderLimits runs the limit steps on inst, in cg, and returns them; it
// stops after the first step the process does not survive or thrashes in,
// and lifts the limit.
func holdUnderLimits(t *testing.T, inst *e2e.Instance, cg *lab.MemCgroup, limits []uint64, announced func() bool) []limitStep {
	t.Helper()
	defer func() {
		if err := cg.RemoveLimit(); err != nil {
			t.Error(err)
		}
	}()
	var steps []limitStep
	for _, limit := range limits {
		st := holdUnder(inst, cg, limit, announced)
		steps = append(steps, st)
		if st.err != nil || st.killed {
			break
		}
		t.Logf("under %.0f MiB for %v: %d major faults, working set %.1f MiB, ready %s, VIPs routed %v",
			mib(limit), st.held.Round(time.Millisecond), st.majorFaults, mib(st.cgroup.WorkingSet()), st.ready, st.announced)
		if st.faultRate() > footprintThrashing {
			break
		}
	}
	return steps
}

// holdUnder sets cg's limit and holds inst under it for footprintLimitHold.
func holdUnder(inst *e2e.Instance, cg *lab.MemCgroup, limit uint64, announced func() bool) limitStep {
	st := limitStep{limit: limit}
	before, err := lab.ReadProcStats(inst.Proc.PID)
	if err != nil {
		st.err = err
		return st
	}
	bfd0, flaps0 := churn(inst)
	start := time.Now()
	if st.err = cg.SetLimit(limit); st.err != nil {
		return st // it holds more than this and cannot give it back
	}
	// Scraped as Prometheus and the probes would during the hold.
	for end := start.Add(footprintLimitHold); time.Now().Before(end) && !st.killed; {
		select {
		case <-inst.Proc.Done():
			st.killed = true
		case <-time.After(5 * time.Second):
			_, _, _ = inst.Metric("sllbrd_ready")
		}
	}
	st.held = time.Since(start)
	if st.killed {
		return st
	}
	after, err := lab.ReadProcStats(inst.Proc.PID)
	if err != nil {
		st.err = err
		return st
	}
	st.majorFaults = after.MajorFaults - before.MajorFaults
	if st.mem, st.err = lab.ReadMemStats(inst.Proc.PID); st.err != nil {
		return st
	}
	if st.cgroup, st.err = cg.Stats(); st.err != nil {
		return st
	}
	st.ready = readiness(inst)
	st.announced = announced()
	bfd1, flaps1 := churn(inst)
	st.bfdDown, st.flaps = bfd1-bfd0, flaps1-flaps0
	return st
}

// readiness is sllbrd_ready as /metrics says it.
func readiness(inst *e2e.Instance) string {
	switch v, ok, err := inst.Metric("sllbrd_ready "); {
	case err != nil:
		return "no answer"
	case !ok:
		return "absent"
	default:
		return fmt.Sprint(v == 1)
	}
}

// churn returns the BFD down transitions and BGP session flaps so far.
func churn(inst *e2e.Instance) (bfdDown, flaps float64) {
	bfdDown, _, _ = inst.Metric(`sllbrd_bfd_transitions_total{direction="down"`)
	flaps, _, _ = inst.Metric("sllbrd_bgp_session_flaps_total{")
	return bfdDown, flaps
}

// printLimitSteps logs one row per limit.
func printLimitSteps(t *testing.T, source string, steps []limitStep) {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "limit MiB\tmajor faults/s\tworking set\tusage\tanon\tVmRSS\tready\tVIPs routed\tBFD down\tBGP flaps\t")
	for _, s := range steps {
		switch {
		case s.err != nil:
			fmt.Fprintf(w, "%.0f\t%v\t\n", mib(s.limit), s.err)
		case s.killed:
			fmt.Fprintf(w, "%.0f\tkilled (OOM)\t\n", mib(s.limit))
		default:
			fmt.Fprintf(w, "%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%v\t%.0f\t%.0f\t\n", mib(s.limit),
				s.faultRate(), mib(s.cgroup.WorkingSet()), mib(s.cgroup.Usage),
				mib(s.cgroup.Anon), mib(s.mem.RSS), s.ready, s.announced, s.bfdDown, s.flaps)
		}
	}
	w.Flush()
	t.Logf("sllbrd (%s) held %v under each memory limit, after resting without one:\n%s", source, footprintLimitHold, b.String())
}
