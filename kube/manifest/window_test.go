package manifest

import (
	"testing"
	"time"
)

func TestWindowWidensWhileABurstGoesOn(t *testing.T) {
	w := NewWindow(50 * time.Millisecond)
	at := time.Unix(1000, 0)
	var got []time.Duration
	for range 6 {
		w.Begin(at)
		got = append(got, w.Max())
		at = at.Add(w.Max())
		w.End(at, true)
		at = at.Add(time.Millisecond)
	}
	want := []time.Duration{50, 100, 200, 400, 800, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("maximum delays %v, want %v ms", got, want)
		}
	}
	// A short gap (the burst went quiet for a moment) keeps the width.
	w.End(at, false)
	w.Begin(at.Add(20 * time.Millisecond))
	if w.Max() != time.Second {
		t.Fatalf("after a 20 ms gap in a burst: %v, want 1s", w.Max())
	}
	// A pause as long as the maximum delay starts again from the base.
	w.End(at, false)
	w.Begin(at.Add(time.Second))
	if w.Max() != 50*time.Millisecond {
		t.Fatalf("after a 1 s pause: %v, want the base", w.Max())
	}
}
