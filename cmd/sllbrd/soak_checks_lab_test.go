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
// report's rows (soak.Report: each loss charged to one fault).
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
			s.fails.errorf(t, "%s %s: %d probes lost over %v at %s with no fault", r.Kind, r.Flow, r.Failures, r.Loss, s.at(r.First))
		case r.Loss > bound(r.Events):
			s.fails.errorf(t, "%s %s: %d probes lost over %v at %s during %s, bound %v", r.Kind, r.Flow, r.Failures, r.Loss, s.at(r.First), faults(r.Events), bound(r.Events))
		}
	}
	for _, st := range a.Stalls {
		if b := streamBound(bound(st.Events)); st.RTT > b {
			s.fails.errorf(t, "%s %s: an exchange took %v at %s during %s (bound %v)", st.Kind, st.Flow, st.RTT, s.at(st.At), faults(st.Events), b)
		}
	}
	for _, m := range a.Moves {
		if !slices.ContainsFunc(m.Events, func(q int) bool { return slices.Contains(endpointKinds, kinds[q]) }) {
			s.fails.errorf(t, "%s %s: answered by %s, then by %s (between %s and %s) during %s, which changed no endpoint",
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
			s.fails.errorf(t, "no %s probe was answered in %d samples", k, len(samples))
		}
	}
	t.Logf("%d samples, answered per kind %v; %d loss runs (%d with no fault), %d stalls, %d moves, %d connections broken",
		len(samples), answered, len(a.Runs), len(a.Unexplained), len(a.Stalls), len(a.Moves), len(s.broken))
	broken := make([]soak.Broken, 0, len(s.broken))
	for _, b := range s.broken {
		broken = append(broken, soak.Broken{Kind: b.kind, Why: b.why})
	}
	return soak.Report(a, specs, s.events, broken, bound)
}

// streamBound is the longest exchange of a long-lived connection through a
// fault whose loss bound is loss: TCP sends again after its retransmission
// timeout, doubled at each attempt (RFC 6298 5.5), so the exchange
// completes at the first retransmission after the outage, up to twice the
// outage later. The outage is the loss bound less the probes' resolution.
func streamBound(loss time.Duration) time.Duration {
	outage := loss - soakProbeTimeout
	var at time.Duration
	for rto := soakRTO; at < outage; rto *= 2 {
		at += rto
	}
	return at + soakStall
}

// at renders t as the time since the first fault.
func (s *soakLab) at(t time.Time) string {
	return fmt.Sprint(t.Sub(s.start).Round(10 * time.Millisecond))
}
