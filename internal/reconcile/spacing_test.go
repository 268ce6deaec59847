package reconcile

import (
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

// origin is the instant the tests' offsets count from.
var origin = time.Unix(1_000_000, 0)

// at returns the instants at the given offsets from origin; offsets is its
// inverse.
func at(offsets []time.Duration) []time.Time {
	out := make([]time.Time, len(offsets))
	for i, d := range offsets {
		out[i] = origin.Add(d)
	}
	return out
}

func offsets(times []time.Time) []time.Duration {
	out := make([]time.Duration, len(times))
	for i, t := range times {
		out[i] = t.Sub(origin)
	}
	return out
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
	got := offsets(ApplyTimes(at(every(ms, time.Second)), WithMinInterval(50*ms), WithMaxInterval(time.Second)))
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
		w := s.wait(now-last, now-last)
		if w > 30*ms {
			t.Fatalf("change %d waited %v, want at most 30 ms (min less the 20 ms since the apply)", i, w)
		}
		last = now + w
		s.applied(1)
	}
}

// TestSpacingBacksOffWhenAppliesOutlastTheInterval: on a loaded node, or
// with thousands of endpoints, an apply can take longer than the interval;
// the changes that arrived meanwhile are still a burst. The next apply runs
// at once (the interval has passed since the previous one began) and each
// such apply doubles the interval, until the loop waits between applies.
// (Counting quiet from the previous apply's start, as before 2026-11-26,
// every such apply found the interval passed, reset it to its minimum and
// the loop applied back to back for as long as the changes came.)
func TestSpacingBacksOffWhenAppliesOutlastTheInterval(t *testing.T) {
	s := spacing{min: 50 * ms, max: time.Second}
	for i, want := range []struct{ wait, cur time.Duration }{
		{0, 100 * ms}, {0, 200 * ms}, {0, 400 * ms}, {100 * ms, 800 * ms}, {500 * ms, time.Second},
	} {
		// The previous apply began 300 ms ago and ended 5 ms ago; changes
		// came while it ran.
		if w := s.wait(300*ms, 5*ms); w != want.wait {
			t.Fatalf("apply %d: waited %v, want %v", i, w, want.wait)
		}
		s.applied(3)
		if s.cur != want.cur {
			t.Fatalf("after apply %d: interval %v, want %v", i, s.cur, want.cur)
		}
	}
	// A change after a quiet period as long as the interval, counted from
	// the end of the last apply, is applied at once.
	if w := s.wait(time.Second+300*ms, time.Second); w != 0 || s.cur != 50*ms {
		t.Fatalf("after a quiet second: wait %v, interval %v; want 0 and min", w, s.cur)
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
	if w := s.wait(0, 0); w > time.Second {
		t.Fatalf("waited %v, beyond max", w)
	}
	for range 5 {
		s.applied(1)
	}
	if s.cur != 50*ms {
		t.Fatalf("interval %v after five single changes, want min", s.cur)
	}
	s.applied(100)
	if w := s.wait(2*time.Second, 2*time.Second); w != 0 || s.cur != 50*ms {
		t.Fatalf("after a quiet second: wait %v, interval %v; want 0 and min", w, s.cur)
	}
}

// TestApplyTimesCounts: how many applies a series of changes costs.
func TestApplyTimesCounts(t *testing.T) {
	tests := []struct {
		name    string
		changes []time.Duration
		want    int
	}{
		{"none", nil, 0},
		{"isolated changes each applied at once", every(100*ms, 400*ms), 5},
		// Applies at 0, 50, 150, 350, 750 (interval doubling) and 1550
		// taking what came after 750.
		{"1,000 changes in a second", every(ms, 999*ms), 6},
		// The interval is back at its minimum once a quiet period as long as
		// it (1 s after the first burst) has passed.
		{"two bursts with a pause", append(every(ms, 999*ms), shift(every(ms, 999*ms), 3*time.Second)...), 12},
		// Changes 60 ms apart: every apply takes one change, the interval
		// stays at its minimum and each is applied at once.
		{"changes slower than the minimum interval", every(60*ms, 540*ms), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(ApplyTimes(at(tt.changes))); got != tt.want {
				t.Errorf("%d applies, want %d", got, tt.want)
			}
		})
	}
}

func shift(ds []time.Duration, by time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d + by
	}
	return out
}
