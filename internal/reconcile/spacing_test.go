package reconcile

import (
	"testing"
	"time"
)

const ms = time.Millisecond

func TestSpacingAppliesTheLeadingEdgeAtOnce(t *testing.T) {
	s := spacing{min: 50 * ms, max: time.Second}
	if w := s.wait(time.Hour); w != 0 {
		t.Fatalf("first change waited %v", w)
	}
	if w := s.wait(60 * ms); w != 0 {
		t.Fatalf("a change after a quiet interval waited %v", w)
	}
}

// TestSpacingWidensUnderABurst replays a burst of changes arriving every
// millisecond for one second: the applies land at 0, 50, 150, 350, 750 and
// 1550 ms (the interval doubling from 50 ms to the 1 s cap), six in all,
// where a fixed 50 ms interval would give 21.
func TestSpacingWidensUnderABurst(t *testing.T) {
	s := spacing{min: 50 * ms, max: time.Second}
	var applies []time.Duration
	last := -time.Hour
	next := time.Duration(-1) // when the pending apply runs; -1: none pending
	for now := time.Duration(0); now <= 3*time.Second; now += ms {
		if now <= time.Second && next < 0 { // a change arrives, nothing pending yet
			next = now + s.wait(now-last)
		}
		if now == next {
			applies, last, next = append(applies, now), now, -1
		}
	}
	want := []time.Duration{0, 50 * ms, 150 * ms, 350 * ms, 750 * ms, 1550 * ms}
	if len(applies) != len(want) {
		t.Fatalf("applies at %v, want %v", applies, want)
	}
	for i := range want {
		if applies[i] != want[i] {
			t.Fatalf("applies at %v, want %v", applies, want)
		}
	}
}

func TestSpacingNeverWaitsLongerThanMax(t *testing.T) {
	s := spacing{min: 50 * ms, max: 200 * ms}
	for range 20 {
		if w := s.wait(0); w > 200*ms {
			t.Fatalf("waited %v, beyond max", w)
		}
	}
	if s.cur != 200*ms {
		t.Fatalf("interval %v after a long burst, want the cap", s.cur)
	}
	if w := s.wait(200 * ms); w != 0 || s.cur != 50*ms {
		t.Fatalf("after a quiet interval: wait %v, interval %v; want 0 and min", w, s.cur)
	}
}
