package main

import (
	"testing"
	"time"
)

// TestSpacedApplies pins the model the burst checks bound applies with: the
// reconcile loop's spacing rule, replayed on change times.
func TestSpacedApplies(t *testing.T) {
	at := func(ms ...int) []time.Time {
		base := time.Unix(1_000_000, 0)
		out := make([]time.Time, len(ms))
		for i, m := range ms {
			out[i] = base.Add(time.Duration(m) * time.Millisecond)
		}
		return out
	}
	every := func(from, step, n int) []int {
		ms := make([]int, n)
		for i := range ms {
			ms[i] = from + i*step
		}
		return ms
	}
	tests := []struct {
		name    string
		changes []int // ms
		want    int
	}{
		{"none", nil, 0},
		{"isolated changes each applied at once", every(0, 100, 5), 5},
		// Applies at 0, 50, 150, 350, 750 (interval doubling) and 1550
		// taking what came after 750.
		{"1,000 changes in a second", every(0, 1, 1000), 6},
		// The interval is back at its minimum once a quiet period as long as
		// it (1 s after the first burst) has passed.
		{"two bursts with a pause", append(every(0, 1, 1000), every(3000, 1, 1000)...), 12},
		// Changes 60 ms apart: every apply takes one change, the interval
		// stays at its minimum and each is applied at once.
		{"changes slower than the minimum interval", every(0, 60, 10), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spacedApplies(at(tt.changes...)); got != tt.want {
				t.Errorf("spacedApplies = %d, want %d", got, tt.want)
			}
		})
	}
}
