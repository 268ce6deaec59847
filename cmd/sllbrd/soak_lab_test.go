package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/internal/harness/soak"
)

var (
	soakDuration  = flag.Duration("soak.duration", 2*time.Minute, "how long TestIntegrationSoak injects faults (make soak: 10m)")
	soakSeed      = flag.Int64("soak.seed", 0, "the seed of TestIntegrationSoak's fault schedule (0: a new one, printed)")
	soakReport    = flag.String("soak.report", "", "where TestIntegrationSoak writes its report (Markdown); empty: the log only")
	soakDataplane = flag.String("soak.dataplane", dataplaneKernel, "the SLLBRs' --dataplane in TestIntegrationSoak (make soak SOAK_DATAPLANE=bpf)")
)

const (
	// soakWarmup: traffic runs this long before the resources' baseline and
	// the first fault.
	soakWarmup = 20 * time.Second
	// soakSettle: traffic effects this long after a fault is back (steady)
	// still count as the fault's.
	soakSettle = 5 * time.Second
	// soakConverge bounds how long the system may take to be steady again
	// after a fault is undone.
	soakConverge = 90 * time.Second
)

// TestIntegrationSoak runs the whole system (TestIntegrationCluster's lab
// with everything up: two controller replicas, three SLLBRs behind BIRD's
// ECMP, four targets with their sidecars, both families) under traffic of
// every kind for -soak.duration, while faults from a seeded schedule
// overlap: SLLBRs killed, drained and scaled, the leading controller
// killed, kube-apiserver and BIRD restarted, target links flapped, target
// Pods re-created and their readiness flapped, L34Routes edited, bursts of
// writes. It fails on any packet routed by the main table, any loss window
// beyond its fault's bound or outside any fault, any flow answered by
// another target than its own unless a fault changed the endpoints, any
// long-lived connection broken except by its target's removal or Maglev's
// move, resources that grow, and a final state that differs from a fresh
// start's. `make soak` runs it for 10 minutes; the seed replays a run.
func TestIntegrationSoak(t *testing.T) {
	require.Lab(t)
	seed := *soakSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	fails := &soakFailures{replay: fmt.Sprintf("make soak SOAK_SEED=%d SOAK_DURATION=%v SOAK_DATAPLANE=%s", seed, *soakDuration, *soakDataplane)}
	fails.sayAtTheEnd(t)
	specs := soakSpecs()
	plan, err := soak.Plan(seed, *soakDuration, specs, soak.PlanOptions{MeanGap: 3 * time.Second, MaxOverlap: 2, Settle: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("soak: seed %d, %v, %d faults, race detector %v, --dataplane %s; replay: %s",
		seed, *soakDuration, len(plan), raceEnabled, *soakDataplane, fails.replay)
	for _, f := range plan {
		t.Logf("  plan: at %v: #%s (held %v)", f.At.Round(time.Millisecond), faultName(f), f.Hold)
	}
	s := newSoakLab(newClusterWith(t, clusterOptions{udpPorts: []uint16{soakUDPPort}, timeout: *soakDuration + 20*time.Minute}), fails)
	s.startTraffic()
	time.Sleep(soakWarmup)
	base := s.resources()
	s.start = time.Now()
	s.sampleMemory()
	s.run(plan, specs)
	if t.Failed() {
		return
	}
	time.Sleep(2 * soakSettle) // the last fault's tail
	now := s.resources()
	s.sampleMemory()
	s.stopTraffic()
	s.checkRouteAudit("at the end")
	rows := s.checkTraffic(specs)
	report := soak.Markdown(rows)
	t.Logf("soak report (seed %d, %v):\n%s", seed, *soakDuration, report)
	if *soakReport != "" {
		head := fmt.Sprintf("Seed %d, %v, race detector %v, --dataplane %s, %s.\n\n", seed, *soakDuration, raceEnabled, *soakDataplane, time.Now().UTC().Format(time.DateOnly))
		if err := os.WriteFile(*soakReport, []byte(head+report), 0o644); err != nil {
			t.Error(err)
		}
	}
	s.checkResources(base, now)
	s.checkMemory(base, now)
	s.checkFreshStart()
}

// runningFault is a fault of the schedule under way.
type runningFault struct {
	steps    soakFault
	ev       soak.Event
	revertAt time.Time
	reverted time.Time // zero: not yet
	polled   time.Time
	why      string // why the system is not steady yet
	lastWhy  string // the last such reason, for the log
}

// run plays plan: each fault starts at its time once no running fault
// shares its target or excludes it, is undone after its hold, and ends when
// the system is steady again. Everything runs in the test's goroutine.
func (s *soakLab) run(plan []soak.Fault, specs []soak.Spec) {
	t := s.t
	excl := map[soak.Kind][]soak.Kind{}
	for _, sp := range specs {
		for _, k := range sp.Excludes {
			excl[sp.Kind] = append(excl[sp.Kind], k)
			excl[k] = append(excl[k], sp.Kind)
		}
	}
	blocked := func(f soak.Fault) bool {
		for _, r := range s.running {
			if (f.Target != "" && r.ev.Target == f.Target) || r.ev.Kind == f.Kind || slices.Contains(excl[f.Kind], r.ev.Kind) {
				return true
			}
		}
		return false
	}
	next := 0
	for next < len(plan) || len(s.running) > 0 {
		s.watchStreams()
		s.probeReadiness()
		if time.Since(s.memAt) >= soakMemEvery {
			s.sampleMemory()
		}
		if next < len(plan) && time.Since(s.start) >= plan[next].At && !blocked(plan[next]) {
			f := plan[next]
			next++
			r := &runningFault{steps: s.fault(f), ev: soak.Event{Fault: f, Start: time.Now()}}
			t.Logf("%s: fault #%s", s.elapsed(), faultName(f))
			s.running = append(s.running, r) // before inject: what breaks meanwhile is the fault's
			if err := r.steps.inject(); err != nil {
				s.fails.fatalf(t, "fault #%s: %v", faultName(f), err)
			}
			r.revertAt = time.Now().Add(f.Hold)
			continue
		}
		s.revertDue()
		for i := 0; i < len(s.running); i++ {
			r := s.running[i]
			switch {
			case !r.reverted.IsZero() && time.Since(r.polled) > 300*time.Millisecond:
				r.polled = time.Now()
				var ok bool
				if ok, r.why = s.steady(); !ok {
					r.lastWhy = r.why
				}
				if ok {
					r.ev.End = time.Now()
					s.events = append(s.events, r.ev)
					s.running = slices.Delete(s.running, i, i+1)
					i--
					t.Logf("%s: fault #%d over: steady %v after it was undone (last not steady: %s)", s.elapsed(), r.ev.Seq,
						r.ev.End.Sub(r.reverted).Round(time.Millisecond), r.lastWhy)
					s.checkRouteAudit("by the end of fault #" + faultName(r.ev.Fault))
					if len(s.running) == 0 {
						s.replaceBrokenStreams()
					}
				} else if time.Since(r.reverted) > soakConverge {
					s.fails.fatalf(t, "fault #%s: not steady %v after it was undone: %s", faultName(r.ev.Fault), soakConverge, r.why)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// revertDue undoes each running fault whose hold is over. Steps that wait
// (an SLLBR's drain) call it too, so that the faults beside them keep
// their holds. A fault still being injected has no revert time yet.
func (s *soakLab) revertDue() {
	for _, r := range s.running {
		if !r.reverted.IsZero() || r.revertAt.IsZero() || time.Now().Before(r.revertAt) {
			continue
		}
		r.reverted = time.Now() // first: its revert may wait and call revertDue
		if err := r.steps.revert(); err != nil {
			s.fails.fatalf(s.t, "fault #%s: undo: %v", faultName(r.ev.Fault), err)
		}
		s.t.Logf("%s: fault #%d undone", s.elapsed(), r.ev.Seq)
	}
}

// eventsBetween lists the faults running, or over within soakSettle, at
// some time in [from, to].
func (s *soakLab) eventsBetween(from, to time.Time) []soak.Event {
	var out []soak.Event
	for _, r := range s.running {
		if !to.Before(r.ev.Start) {
			out = append(out, r.ev)
		}
	}
	for _, ev := range s.events {
		if !to.Before(ev.Start) && !from.After(ev.End.Add(soakSettle)) {
			out = append(out, ev)
		}
	}
	return out
}

func describe(evs []soak.Event) string {
	var parts []string
	for _, ev := range evs {
		parts = append(parts, "#"+faultName(ev.Fault))
	}
	if len(parts) == 0 {
		return "no fault"
	}
	return strings.Join(parts, ", ")
}

// faultName is "<seq> <kind> [<target>]".
func faultName(f soak.Fault) string {
	if f.Target == "" || f.Target == string(f.Kind) {
		return fmt.Sprintf("%d %s", f.Seq, f.Kind)
	}
	return fmt.Sprintf("%d %s %s", f.Seq, f.Kind, f.Target)
}
