package main

import (
	"net/netip"
	"slices"
	"time"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/soak"
)

// The soak's long-lived connections: each break is judged when it happens,
// while the faults that may explain it are still there to ask about.

// streamBreak is why one long-lived connection broke.
type streamBreak struct {
	at     time.Time
	target string
	vip    netip.Addr
	why    string
	ok     bool   // allowed: its target was removed, or Maglev moved its flow
	err    string // what the connection saw
	faults string
	kind   soak.Kind // of the first fault around it (soak.NoFault: none)
}

// watchStreams judges every connection broken since the last call: it may
// break when a fault removed its own target, or when Maglev gives its flow
// to another target because a fault changed the endpoints (what an SLLBR's
// `sllbrd explain` says now). Anything else is a broken connection the
// design keeps.
func (s *soakLab) watchStreams() {
	for _, set := range s.streams {
		for _, st := range set.Stats() {
			key := st.Flow.String()
			if st.Err == nil || s.broken[key].at != (time.Time{}) {
				continue
			}
			evs := s.eventsBetween(st.BrokeAt, time.Now())
			b := streamBreak{at: st.BrokeAt, target: st.Target, vip: st.Flow.Dst.Addr(), err: st.Err.Error(), faults: describe(evs), kind: soak.NoFault}
			if len(evs) > 0 {
				b.kind = evs[0].Kind
			}
			own := slices.IndexFunc(evs, func(ev soak.Event) bool { return ev.Target == st.Target && slices.Contains(endpointKinds, ev.Kind) })
			other := slices.IndexFunc(evs, func(ev soak.Event) bool { return slices.Contains(endpointKinds, ev.Kind) })
			switch {
			case own >= 0:
				b.why, b.ok, b.kind = "its target removed", true, evs[own].Kind
			case other >= 0:
				b.kind = evs[other].Kind
				if now := s.decidedByAnyLB(st.Flow); now != st.Target && now != "" {
					b.why, b.ok = "Maglev moved its flow to "+now, true
				} else {
					b.why = "broken while another target changed (its flow still decided to " + now + ")"
				}
			default:
				b.why = "broken"
			}
			s.broken[key] = b
			if !b.ok {
				s.fails.errorf(s.t, "%s: the long-lived connection %s to %s broke (%s) during %s: %s", s.elapsed(), key, st.Target, b.why, b.faults, b.err)
			} else {
				s.t.Logf("%s: the long-lived connection %s to %s broke: %s (%s)", s.elapsed(), key, st.Target, b.why, b.faults)
			}
		}
	}
}

// decidedByAnyLB is the target a running SLLBR decides f to ("" when none
// answers).
func (s *soakLab) decidedByAnyLB(f lab.Flow) string {
	for _, i := range []int{1, 2, 3} {
		inst, ok := s.lbs[i]
		if !ok {
			continue
		}
		select {
		case <-inst.Proc.Done():
			continue
		default:
		}
		if x, err := explainSoakFlow(inst.AdminSocket, f); err == nil {
			return decidedTo(x)
		}
	}
	return ""
}

// replaceBrokenStreams opens as many connections as broke, per VIP, so the
// soak keeps its long-lived connections.
func (s *soakLab) replaceBrokenStreams() {
	open := map[netip.Addr]int{}
	for _, set := range s.streams {
		for _, st := range set.Stats() {
			if st.Err == nil {
				open[st.Flow.Dst.Addr()]++
			}
		}
	}
	for _, vip := range []netip.Addr{vip4, vip6} {
		if n := soakStreams - open[vip]; n > 0 {
			s.openStreams(vip, n)
		}
	}
}

// explainSoakFlow is `sllbrd explain` of f against socket.
func explainSoakFlow(socket string, f lab.Flow) (admin.Explanation, error) {
	var x admin.Explanation
	err := adminJSON(socket, &x, "explain", f.Proto, f.Src.String(), f.Dst.String())
	return x, err
}
