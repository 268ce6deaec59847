package manifest

import (
	"testing"
	"time"
)

func TestWindowWidensWhileABurstGoesOn(t *testing.T) {
	w := NewWindow(50 * time.Millisecond)
	var got []time.Duration
	for range 6 {
		got = append(got, w.Max())
		w.Ended(true)
	}
	want := []time.Duration{50, 100, 200, 400, 800, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("maximum delays %v, want %v ms", got, want)
		}
	}
	w.Ended(false)
	if w.Max() != 50*time.Millisecond {
		t.Fatalf("after a burst that went quiet: %v, want the base", w.Max())
	}
}
