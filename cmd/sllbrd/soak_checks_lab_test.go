package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/soak"
)

// The soak's judgement of its traffic (soak.Analyze), against each fault's
// bound.

// checkTraffic fails the test for every loss outside a fault or longer than
// the largest bound of the faults it falls in, every stall likewise, every
// fixed flow answered by another target unless a fault changed the
// endpoints then, and a probe kind that never got an answer. It returns the
// report's rows.
func (s *soakLab) checkTraffic(specs []soak.Spec) []soak.Row {
	t := s.t
	samples := s.rec.Samples()
	a := soak.Analyze(samples, s.events, soakSettle)
	bounds := map[soak.Kind]time.Duration{}
	for _, sp := range specs {
		bounds[sp.Kind] = sp.Bound
	}
	kinds := map[int]soak.Kind{}
	for _, ev := range s.events {
		kinds[ev.Seq] = ev.Kind
	}
	bound := func(seqs []int) time.Duration {
		var b time.Duration
		for _, q := range seqs {
			b = max(b, bounds[kinds[q]])
		}
		return b
	}
	faults := func(seqs []int) string {
		var parts []string
		for _, q := range seqs {
			parts = append(parts, fmt.Sprintf("#%d %s", q, kinds[q]))
		}
		return strings.Join(parts, ", ")
	}
	for _, r := range a.Runs {
		switch {
		case len(r.Events) == 0:
			t.Errorf("%s %s: %d probes lost over %v at %s with no fault", r.Kind, r.Flow, r.Failures, r.Loss, s.at(r.First))
		case r.Loss > bound(r.Events):
			t.Errorf("%s %s: %d probes lost over %v at %s during %s, bound %v", r.Kind, r.Flow, r.Failures, r.Loss, s.at(r.First), faults(r.Events), bound(r.Events))
		}
	}
	for _, st := range a.Stalls {
		if b := max(bound(st.Events), soakStall); st.RTT > b {
			t.Errorf("%s %s: an exchange took %v at %s during %s (bound %v)", st.Kind, st.Flow, st.RTT, s.at(st.At), faults(st.Events), b)
		}
	}
	for _, m := range a.Moves {
		if !slices.ContainsFunc(m.Events, func(q int) bool { return slices.Contains(endpointKinds, kinds[q]) }) {
			t.Errorf("%s %s: answered by %s, then by %s (between %s and %s) during %s, which changed no endpoint",
				m.Kind, m.Flow, m.From, m.To, s.at(m.After), s.at(m.Before), faults(m.Events))
		}
	}
	answered := map[string]int{}
	for _, sm := range samples {
		if !sm.Failed() {
			answered[sm.Kind]++
		}
	}
	for _, k := range []string{"udp4", "udp6", "tcp4", "tcp6", "frag4", "frag6", "ping4", "ping6", "sctp4", "sctp6"} {
		if answered[k] == 0 {
			t.Errorf("no %s probe was answered in %d samples", k, len(samples))
		}
	}
	t.Logf("%d samples, answered per kind %v; %d loss runs (%d with no fault), %d stalls, %d moves, %d connections broken",
		len(samples), answered, len(a.Runs), len(a.Unexplained), len(a.Stalls), len(a.Moves), len(s.broken))
	rows := soak.Rows(a, specs)
	why := map[soak.Kind]map[string]int{} // the judged reasons, by the kind of the first fault around each break
	for _, b := range s.broken {
		if why[b.kind] == nil {
			why[b.kind] = map[string]int{}
		}
		why[b.kind][reasonClass(b.why)]++
	}
	for i := range rows { // the judged reasons, not the connections' errors
		rows[i].Why = why[rows[i].Kind]
	}
	return rows
}

// reasonClass drops a reason's details (the target a flow moved to).
func reasonClass(why string) string {
	if strings.HasPrefix(why, "Maglev moved") {
		return "Maglev moved its flow"
	}
	return why
}

// at renders t as the time since the first fault.
func (s *soakLab) at(t time.Time) string {
	return fmt.Sprint(t.Sub(s.start).Round(10 * time.Millisecond))
}
