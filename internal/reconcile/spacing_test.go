package reconcile

import (
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

// replay runs spacing over changes arriving at the given times (ms steps)
// and returns when the applies ran.
func replay(s *spacing, arrivals []time.Duration, until time.Duration) []time.Duration {
	var applies []time.Duration
	last := -time.Hour
	next := time.Duration(-1) // when the pending apply runs; -1: none pending
	changes := 0
	for now := time.Duration(0); now <= until; now += ms {
		for _, a := range arrivals {
			if a == now {
				changes++
				if next < 0 {
					next = now + s.wait(now-last)
				}
			}
		}
		if now == next {
			applies, last, next = append(applies, now), now, -1
			s.applied(changes)
			changes = 0
		}
	}
	return applies
}

func every(step, until time.Duration) []time.Duration {
	var out []time.Duration
	for t := time.Duration(0); t <= until; t += step {
		out = append(out, t)
	}
	return out
}

// TestSpacingWidensUnderABurst: changes every millisecond for one second
// are applied at 0, 50, 150, 350, 750 and 1550 ms (the interval doubling
// from 50 ms to the 1 s cap): six applies, where a fixed 50 ms interval
// would give 21.
func TestSpacingWidensUnderABurst(t *testing.T) {
	s := spacing{min: 50 * ms, max: time.Second}
	got := replay(&s, every(ms, time.Second), 3*time.Second)
	want := []time.Duration{0, 50 * ms, 150 * ms, 350 * ms, 750 * ms, 1550 * ms}
	if !slices.Equal(got, want) {
		t.Fatalf("applies at %v, want %v", got, want)
	}
}

// TestSpacingKeepsIsolatedChangesFast: changes that each come 20 ms after
// the previous apply (a writer waiting for each to be applied) are not a
// burst: each waits at most min from the previous apply, however many.
func TestSpacingKeepsIsolatedChangesFast(t *testing.T) {
	s := spacing{min: 50 * ms, max: time.Second}
	last := -time.Hour
	for i := range 50 {
		now := last + 20*ms
		w := s.wait(now - last)
		if w > 30*ms {
			t.Fatalf("change %d waited %v, want at most 30 ms (min less the 20 ms since the apply)", i, w)
		}
		last = now + w
		s.applied(1)
	}
}

func TestSpacingRecoversAfterABurst(t *testing.T) {
	s := spacing{min: 50 * ms, max: time.Second}
	for range 10 {
		s.applied(100)
	}
	if s.cur != time.Second {
		t.Fatalf("interval %v after a long burst, want the 1 s cap", s.cur)
	}
	if w := s.wait(0); w > time.Second {
		t.Fatalf("waited %v, beyond max", w)
	}
	for range 5 {
		s.applied(1)
	}
	if s.cur != 50*ms {
		t.Fatalf("interval %v after five single changes, want min", s.cur)
	}
	s.applied(100)
	if w := s.wait(2 * time.Second); w != 0 || s.cur != 50*ms {
		t.Fatalf("after a quiet second: wait %v, interval %v; want 0 and min", w, s.cur)
	}
}
