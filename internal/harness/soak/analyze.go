package soak

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Run is a run of consecutive failed samples of one probe series (Kind,
// Flow).
type Run struct {
	Kind, Flow  string
	First, Last time.Time // At of its first and last failure
	Failures    int
	// Loss is the At of the first success after the run minus First; for a
	// run still open at the end, the last failure's At+RTT minus First.
	Loss   time.Duration
	Open   bool
	Events []int // Seq of the events it belongs to; empty: unexplained
}

// Stall is a stream exchange slower than the stall threshold.
type Stall struct {
	Kind, Flow string
	At         time.Time
	RTT        time.Duration // the exchange's duration: its loss
	Events     []int
}

// Break is a stream connection that broke.
type Break struct {
	Kind, Flow string
	At         time.Time
	Err        string
	Events     []int
}

// Move is a fixed flow answered by another target than before.
type Move struct {
	Kind, Flow    string
	From, To      string
	After, Before time.Time // the answered samples on either side of the change
	Events        []int     // Seq of the events whose window overlaps [After, Before]
}

// EventLoss is what the traffic suffered during one event's window.
type EventLoss struct {
	Event Event
	// Loss is, per probe kind, the longest run attributed to the event (the
	// maximum over the kind's flows); kinds without a run are absent.
	Loss     map[string]time.Duration
	Worst    time.Duration  // the maximum of Loss
	StallMax time.Duration  // the longest stream stall attributed
	Breaks   map[string]int // stream breaks attributed, by Err
	Moves    int            // fixed-flow moves attributed
}

// Analysis is the judgement of a soak's traffic. Every slice is in time
// order; an item with no Events belongs to no event.
type Analysis struct {
	Samples int
	Runs    []Run
	Stalls  []Stall
	Breaks  []Break
	Moves   []Move
	Events  []EventLoss // by Start

	// The runs, stalls and breaks that belong to no event.
	Unexplained       []Run
	UnexplainedStalls []Stall
	UnexplainedBreaks []Break
}

type series struct{ kind, flow string }

// seriesState follows one series through the sorted samples.
type seriesState struct {
	run      *Run          // the open run, if any
	runRTT   time.Duration // the RTT of the open run's first failure
	answered *Sample       // the last answered sample with a target (moves)
}

// Analyze judges samples against the executed events. An item belongs to
// every event whose window [Start, End+settle] overlaps the item's own
// interval: for a run, its first failure [At, At+RTT] (a probe sent just
// before a fault and lost to it belongs to it); for a stall or break,
// [At, At+RTT]; for a move, [After, Before]. The samples need not be
// sorted; they are sorted once (a copy), and each is looked at once.
func Analyze(samples []Sample, events []Event, settle time.Duration) Analysis {
	sorted := slices.Clone(samples)
	sortSamples(sorted)
	w := newWindows(events, settle)
	a := Analysis{Samples: len(sorted), Events: make([]EventLoss, len(w.events))}
	for i, e := range w.events {
		a.Events[i] = EventLoss{Event: e, Loss: map[string]time.Duration{}, Breaks: map[string]int{}}
	}
	states := map[series]*seriesState{}
	for i := range sorted {
		s := &sorted[i]
		if isStream(s.Kind) {
			a.addStream(w, s)
			continue
		}
		k := series{s.Kind, s.Flow}
		st := states[k]
		if st == nil {
			st = &seriesState{}
			states[k] = st
		}
		if s.Failed() {
			if st.run == nil {
				st.run, st.runRTT = &Run{Kind: s.Kind, Flow: s.Flow, First: s.At}, s.RTT
			}
			st.run.Last, st.run.Failures = s.At, st.run.Failures+1
			st.run.Loss = s.At.Add(s.RTT).Sub(st.run.First) // until a success closes it
			continue
		}
		if st.run != nil {
			st.run.Loss = s.At.Sub(st.run.First)
			a.addRun(w, st.run, st.runRTT)
			st.run = nil
		}
		if s.Flow != "" && s.Target != "" && tracksMoves(s.Kind) {
			if p := st.answered; p != nil && p.Target != s.Target {
				a.addMove(w, Move{Kind: s.Kind, Flow: s.Flow, From: p.Target, To: s.Target, After: p.At, Before: s.At})
			}
			st.answered = s
		}
	}
	for _, st := range states {
		if st.run != nil {
			st.run.Open = true
			a.addRun(w, st.run, st.runRTT)
		}
	}
	// Same-At samples of different series may come in any order: sort by
	// a total order so the result does not depend on it.
	sortItems(a.Runs, func(r Run) (time.Time, string, string) { return r.First, r.Kind, r.Flow })
	sortItems(a.Stalls, func(x Stall) (time.Time, string, string) { return x.At, x.Kind, x.Flow })
	sortItems(a.Breaks, func(b Break) (time.Time, string, string) { return b.At, b.Kind, b.Flow })
	sortItems(a.Moves, func(m Move) (time.Time, string, string) { return m.Before, m.Kind, m.Flow })
	a.Unexplained = unexplained(a.Runs, func(r Run) []int { return r.Events })
	a.UnexplainedStalls = unexplained(a.Stalls, func(x Stall) []int { return x.Events })
	a.UnexplainedBreaks = unexplained(a.Breaks, func(b Break) []int { return b.Events })
	return a
}

func (a *Analysis) addRun(w *windows, r *Run, firstRTT time.Duration) {
	idx := w.overlapping(r.First, r.First.Add(firstRTT))
	r.Events = w.seqs(idx)
	for _, i := range idx {
		el := &a.Events[i]
		el.Loss[r.Kind] = max(el.Loss[r.Kind], r.Loss)
		el.Worst = max(el.Worst, r.Loss)
	}
	a.Runs = append(a.Runs, *r)
}

func (a *Analysis) addStream(w *windows, s *Sample) {
	idx := w.overlapping(s.At, s.At.Add(s.RTT))
	seqs := w.seqs(idx)
	if s.Failed() {
		for _, i := range idx {
			a.Events[i].Breaks[s.Err]++
		}
		a.Breaks = append(a.Breaks, Break{Kind: s.Kind, Flow: s.Flow, At: s.At, Err: s.Err, Events: seqs})
		return
	}
	for _, i := range idx {
		a.Events[i].StallMax = max(a.Events[i].StallMax, s.RTT)
	}
	a.Stalls = append(a.Stalls, Stall{Kind: s.Kind, Flow: s.Flow, At: s.At, RTT: s.RTT, Events: seqs})
}

func (a *Analysis) addMove(w *windows, m Move) {
	idx := w.overlapping(m.After, m.Before)
	m.Events = w.seqs(idx)
	for _, i := range idx {
		a.Events[i].Moves++
	}
	a.Moves = append(a.Moves, m)
}

// sortItems sorts s by time, then series (kind, flow).
func sortItems[T any](s []T, key func(T) (time.Time, string, string)) {
	slices.SortStableFunc(s, func(x, y T) int {
		tx, kx, fx := key(x)
		ty, ky, fy := key(y)
		return cmp.Or(tx.Compare(ty), strings.Compare(kx, ky), strings.Compare(fx, fy))
	})
}

// unexplained returns the items that belong to no event.
func unexplained[T any](s []T, events func(T) []int) []T {
	var out []T
	for _, x := range s {
		if len(events(x)) == 0 {
			out = append(out, x)
		}
	}
	return out
}
