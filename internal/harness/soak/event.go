package soak

import (
	"slices"
	"sort"
	"time"
)

// Event is a fault as executed.
type Event struct {
	Fault
	Start time.Time // when the injection began
	End   time.Time // when it was reverted and converged; zero: never (open-ended)
	Err   string    // why injecting or reverting failed; "" when it did not
}

// windows finds the events whose window [Start, End+settle] overlaps a time
// interval, in O(log n + answers) for the usual, mostly disjoint, events.
type windows struct {
	events []Event     // by Start
	ends   []time.Time // ends[i]: window end of events[i]; zero time for open-ended
	maxEnd []time.Time // maxEnd[i]: the latest window end among events[:i+1]
	open   []bool      // open[i]: some event among events[:i+1] is open-ended
	settle time.Duration
}

func newWindows(events []Event, settle time.Duration) *windows {
	w := &windows{events: slices.Clone(events), settle: settle}
	slices.SortStableFunc(w.events, func(a, b Event) int { return a.Start.Compare(b.Start) })
	n := len(w.events)
	w.ends, w.maxEnd, w.open = make([]time.Time, n), make([]time.Time, n), make([]bool, n)
	for i, e := range w.events {
		if !e.End.IsZero() {
			w.ends[i] = e.End.Add(settle)
		}
		w.maxEnd[i], w.open[i] = w.ends[i], e.End.IsZero()
		if i > 0 {
			w.open[i] = w.open[i] || w.open[i-1]
			if w.maxEnd[i-1].After(w.maxEnd[i]) {
				w.maxEnd[i] = w.maxEnd[i-1]
			}
		}
	}
	return w
}

// overlapping returns the indexes (into w.events) of the events whose window
// overlaps [from, to], in Start order.
func (w *windows) overlapping(from, to time.Time) []int {
	// Events starting after to cannot overlap.
	n := sort.Search(len(w.events), func(i int) bool { return w.events[i].Start.After(to) })
	var out []int
	for i := n - 1; i >= 0; i-- {
		if !w.open[i] && w.maxEnd[i].Before(from) {
			break // no event at or before i reaches from
		}
		if w.ends[i].IsZero() || !w.ends[i].Before(from) {
			out = append(out, i)
		}
	}
	slices.Reverse(out)
	return out
}

// seqs maps event indexes to their faults' Seq.
func (w *windows) seqs(idx []int) []int {
	if len(idx) == 0 {
		return nil
	}
	out := make([]int, len(idx))
	for i, x := range idx {
		out[i] = w.events[x].Seq
	}
	return out
}
