package soak

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func ok(ms int, kind, flow, target string) Sample {
	return Sample{At: at(ms), Kind: kind, Flow: flow, Target: target, RTT: time.Millisecond}
}

func lost(ms int, kind, flow string) Sample {
	return Sample{At: at(ms), Kind: kind, Flow: flow, RTT: time.Second, Err: "timeout"}
}

func event(seq int, kind Kind, startMS, endMS int) Event {
	e := Event{Fault: Fault{Seq: seq, Kind: kind, Target: "lb1"}, Start: at(startMS)}
	if endMS >= 0 {
		e.End = at(endMS)
	}
	return e
}

const settle = 500 * time.Millisecond

func TestAnalyzeRuns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []Sample
		events  []Event
		want    []Run
	}{
		{
			name: "closed run in an event",
			samples: []Sample{ok(0, "udp4", "f", "t1"), lost(1000, "udp4", "f"), lost(1200, "udp4", "f"),
				ok(1400, "udp4", "f", "t1")},
			events: []Event{event(0, "lb-kill", 900, 2000)},
			want:   []Run{{Kind: "udp4", Flow: "f", First: at(1000), Last: at(1200), Failures: 2, Loss: 400 * time.Millisecond, Events: []int{0}}},
		},
		{
			name:    "open run at the end: last failure At+RTT",
			samples: []Sample{ok(0, "tcp6", "", "t1"), lost(1000, "tcp6", ""), lost(1500, "tcp6", "")},
			events:  []Event{event(3, "lb-kill", 900, 2000)},
			want:    []Run{{Kind: "tcp6", First: at(1000), Last: at(1500), Failures: 2, Loss: 1500 * time.Millisecond, Open: true, Events: []int{3}}},
		},
		{
			name:    "sent before the fault, lost to it",
			samples: []Sample{lost(800, "udp6", "f"), ok(1800, "udp6", "f", "t1")},
			events:  []Event{event(0, "lb-kill", 1000, 2000)},
			want:    []Run{{Kind: "udp6", Flow: "f", First: at(800), Last: at(800), Failures: 1, Loss: time.Second, Events: []int{0}}},
		},
		{
			name:    "at the end of settle: belongs",
			samples: []Sample{lost(2500, "udp4", "f"), ok(2600, "udp4", "f", "t1")},
			events:  []Event{event(0, "lb-kill", 1000, 2000)},
			want:    []Run{{Kind: "udp4", Flow: "f", First: at(2500), Last: at(2500), Failures: 1, Loss: 100 * time.Millisecond, Events: []int{0}}},
		},
		{
			name:    "after settle: unexplained",
			samples: []Sample{lost(2501, "udp4", "f"), ok(2601, "udp4", "f", "t1")},
			events:  []Event{event(0, "lb-kill", 1000, 2000)},
			want:    []Run{{Kind: "udp4", Flow: "f", First: at(2501), Last: at(2501), Failures: 1, Loss: 100 * time.Millisecond}},
		},
		{
			name:    "never reverted: open-ended window",
			samples: []Sample{lost(60000, "ping4", "id"), ok(60200, "ping4", "id", "")},
			events:  []Event{event(5, "lb-kill", 1000, -1), event(6, "bird-restart", 2000, 3000)},
			want:    []Run{{Kind: "ping4", Flow: "id", First: at(60000), Last: at(60000), Failures: 1, Loss: 200 * time.Millisecond, Events: []int{5}}},
		},
		{
			name:    "two overlapping events",
			samples: []Sample{lost(1500, "frag4", "f"), ok(1700, "frag4", "f", "t1")},
			events:  []Event{event(2, "target-kill", 1200, 3000), event(1, "lb-kill", 1000, 2000)},
			want:    []Run{{Kind: "frag4", Flow: "f", First: at(1500), Last: at(1500), Failures: 1, Loss: 200 * time.Millisecond, Events: []int{1, 2}}},
		},
		{
			name: "series are (kind, flow): interleaved failures do not merge",
			samples: []Sample{lost(100, "udp4", "a"), ok(150, "udp4", "b", "t1"), ok(200, "udp4", "a", "t1"),
				lost(250, "udp4", "b"), ok(300, "udp6", "b", "t1"), ok(400, "udp4", "b", "t2")},
			want: []Run{
				{Kind: "udp4", Flow: "a", First: at(100), Last: at(100), Failures: 1, Loss: 100 * time.Millisecond},
				{Kind: "udp4", Flow: "b", First: at(250), Last: at(250), Failures: 1, Loss: 150 * time.Millisecond},
			},
		},
		{
			name:    "streams make no runs",
			samples: []Sample{{At: at(100), Kind: "stream4", Flow: "s", Err: "reset"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Analyze(tc.samples, tc.events, settle)
			if !reflect.DeepEqual(a.Runs, tc.want) {
				t.Errorf("runs\n got %+v\nwant %+v", a.Runs, tc.want)
			}
			var unexplained []Run
			for _, r := range tc.want {
				if len(r.Events) == 0 {
					unexplained = append(unexplained, r)
				}
			}
			if !reflect.DeepEqual(a.Unexplained, unexplained) {
				t.Errorf("unexplained\n got %+v\nwant %+v", a.Unexplained, unexplained)
			}
			if a.Samples != len(tc.samples) {
				t.Errorf("Samples = %d, want %d", a.Samples, len(tc.samples))
			}
		})
	}
}

func TestAnalyzeStreams(t *testing.T) {
	samples := []Sample{
		{At: at(1100), Kind: "stream4", Flow: "s1", RTT: 700 * time.Millisecond},
		{At: at(1300), Kind: "stream6", Flow: "s2", RTT: 300 * time.Millisecond},
		{At: at(800), Kind: "stream6", Flow: "s3", RTT: 400 * time.Millisecond}, // sent before, stalled into it
		{At: at(1500), Kind: "stream4", Flow: "s4", Err: "connection reset"},
		{At: at(9000), Kind: "stream4", Flow: "s1", RTT: 600 * time.Millisecond},
		{At: at(9500), Kind: "stream6", Flow: "s5", Err: "EOF"},
	}
	a := Analyze(samples, []Event{event(4, "lb-kill", 1000, 2000)}, settle)
	wantStalls := []Stall{
		{Kind: "stream6", Flow: "s3", At: at(800), RTT: 400 * time.Millisecond, Events: []int{4}},
		{Kind: "stream4", Flow: "s1", At: at(1100), RTT: 700 * time.Millisecond, Events: []int{4}},
		{Kind: "stream6", Flow: "s2", At: at(1300), RTT: 300 * time.Millisecond, Events: []int{4}},
		{Kind: "stream4", Flow: "s1", At: at(9000), RTT: 600 * time.Millisecond},
	}
	if !reflect.DeepEqual(a.Stalls, wantStalls) {
		t.Errorf("stalls\n got %+v\nwant %+v", a.Stalls, wantStalls)
	}
	if !reflect.DeepEqual(a.UnexplainedStalls, wantStalls[3:]) {
		t.Errorf("unexplained stalls %+v, want %+v", a.UnexplainedStalls, wantStalls[3:])
	}
	wantBreaks := []Break{
		{Kind: "stream4", Flow: "s4", At: at(1500), Err: "connection reset", Events: []int{4}},
		{Kind: "stream6", Flow: "s5", At: at(9500), Err: "EOF"},
	}
	if !reflect.DeepEqual(a.Breaks, wantBreaks) {
		t.Errorf("breaks\n got %+v\nwant %+v", a.Breaks, wantBreaks)
	}
	if !reflect.DeepEqual(a.UnexplainedBreaks, wantBreaks[1:]) {
		t.Errorf("unexplained breaks %+v, want %+v", a.UnexplainedBreaks, wantBreaks[1:])
	}
	el := a.Events[0]
	if el.StallMax != 700*time.Millisecond || !reflect.DeepEqual(el.Breaks, map[string]int{"connection reset": 1}) {
		t.Errorf("event: stall max %v breaks %v, want 700ms and one reset", el.StallMax, el.Breaks)
	}
	if el.Worst != 0 || len(el.Loss) != 0 {
		t.Errorf("event loss %v worst %v: streams must not count as loss", el.Loss, el.Worst)
	}
}

func TestAnalyzeMoves(t *testing.T) {
	samples := []Sample{
		ok(0, "udp4", "f", "t1"),
		ok(200, "udp4", "f", "t1"),
		lost(400, "udp4", "f"),
		ok(1600, "udp4", "f", "t2"), // moved across a loss, inside the event
		ok(4000, "udp4", "f", "t2"),
		ok(5000, "udp4", "f", "t3"), // moved without a fault
		ok(0, "frag6", "g", "t1"),
		ok(1200, "frag6", "g", "t4"),
		ok(0, "udp6", "h", "t1"),
		{At: at(100), Kind: "udp6", Flow: "h", RTT: time.Millisecond}, // answered, target unknown: ignored
		ok(200, "udp6", "h", "t1"),
		ok(0, "ping4", "id", ""), ok(200, "ping4", "id", "t9"), // pings do not say who
		ok(0, "tcp4", "", "t1"), ok(200, "tcp4", "", "t2"), // a new flow each probe
		ok(0, "udp4", "other", "t2"), ok(200, "udp4", "other", "t2"),
	}
	a := Analyze(samples, []Event{event(7, "target-kill", 1000, 2000)}, settle)
	want := []Move{
		{Kind: "frag6", Flow: "g", From: "t1", To: "t4", After: at(0), Before: at(1200), Events: []int{7}},
		{Kind: "udp4", Flow: "f", From: "t1", To: "t2", After: at(200), Before: at(1600), Events: []int{7}},
		{Kind: "udp4", Flow: "f", From: "t2", To: "t3", After: at(4000), Before: at(5000)},
	}
	if !reflect.DeepEqual(a.Moves, want) {
		t.Errorf("moves\n got %+v\nwant %+v", a.Moves, want)
	}
	if a.Events[0].Moves != 2 {
		t.Errorf("event moves %d, want 2", a.Events[0].Moves)
	}
}

func TestAnalyzeEventLoss(t *testing.T) {
	samples := []Sample{
		lost(1000, "udp4", "a"), ok(1300, "udp4", "a", "t1"), // 300ms
		lost(1000, "udp4", "b"), ok(1800, "udp4", "b", "t1"), // 800ms: udp4's max
		lost(1100, "tcp6", ""), ok(1200, "tcp6", "", "t1"), // 100ms
		lost(1500, "udp4", "a"), ok(1600, "udp4", "a", "t1"), // a second, shorter run of a
		{At: at(1100), Kind: "stream4", Flow: "s", RTT: 3 * time.Second}, // a stall is not loss
		lost(5000, "udp6", "c"), ok(5100, "udp6", "c", "t1"), // later event only
	}
	events := []Event{event(0, "lb-kill", 900, 2000), event(1, "bird-restart", 4800, 4900)}
	a := Analyze(samples, events, settle)
	want := []EventLoss{
		{Event: events[0], Loss: map[string]time.Duration{"udp4": 800 * time.Millisecond, "tcp6": 100 * time.Millisecond},
			Worst: 800 * time.Millisecond, StallMax: 3 * time.Second, Breaks: map[string]int{}},
		{Event: events[1], Loss: map[string]time.Duration{"udp6": 100 * time.Millisecond},
			Worst: 100 * time.Millisecond, Breaks: map[string]int{}},
	}
	if !reflect.DeepEqual(a.Events, want) {
		t.Errorf("events\n got %+v\nwant %+v", a.Events, want)
	}
}

func TestAnalyzeOrderIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	samples := randomSamples(rng, 5000)
	events := []Event{event(0, "a", 10000, 20000), event(1, "b", 15000, 40000), event(2, "c", 60000, -1)}
	want := Analyze(samples, events, settle)
	rng.Shuffle(len(samples), func(i, j int) { samples[i], samples[j] = samples[j], samples[i] })
	slices.Reverse(events)
	got := Analyze(samples, events, settle)
	if !reflect.DeepEqual(got, want) {
		t.Error("shuffled samples and events gave another analysis")
	}
	if len(want.Runs) == 0 || len(want.Moves) == 0 || len(want.Stalls) == 0 || len(want.Unexplained) == 0 {
		t.Errorf("the random samples exercise too little: %d runs, %d moves, %d stalls, %d unexplained",
			len(want.Runs), len(want.Moves), len(want.Stalls), len(want.Unexplained))
	}
}

// randomSamples are n samples, 200 ms apart per series, over udp, tcp and
// stream series, with failures and target changes.
func randomSamples(rng *rand.Rand, n int) []Sample {
	kinds := []string{"udp4", "udp6", "tcp4", "frag6", "stream4"}
	out := make([]Sample, 0, n)
	for i := range n {
		k := kinds[i%len(kinds)]
		flow := fmt.Sprintf("f%d", rng.IntN(3))
		if k == "tcp4" {
			flow = ""
		}
		s := Sample{At: at(i / len(kinds) * 200), Kind: k, Flow: flow, Target: fmt.Sprintf("t%d", rng.IntN(4)), RTT: time.Millisecond}
		switch {
		case rng.IntN(10) == 0:
			s.Target, s.Err, s.RTT = "", "timeout", time.Second
		case k == "stream4" && rng.IntN(5) != 0:
			s.RTT = time.Duration(rng.IntN(2000)) * time.Millisecond
		}
		out = append(out, s)
	}
	return out
}

func TestWindowsOverlapping(t *testing.T) {
	// The prefix-maximum search must find exactly what a scan finds.
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var events []Event
		for i := range rng.IntN(20) {
			start := rng.IntN(100000)
			end := start + rng.IntN(30000)
			if rng.IntN(15) == 0 {
				end = -1
			}
			events = append(events, event(i, "k", start, end))
		}
		w := newWindows(events, settle)
		for range 50 {
			from := rng.IntN(140000)
			to := from + rng.IntN(3000)
			got := w.seqs(w.overlapping(at(from), at(to)))
			var want []int
			for _, e := range w.events { // by Start, as overlapping returns
				if !e.Start.After(at(to)) && (e.End.IsZero() || !e.End.Add(settle).Before(at(from))) {
					want = append(want, e.Seq)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d [%d, %d]: got %v, want %v", round, from, to, got, want)
			}
		}
	}
}

// BenchmarkAnalyze is a 10-minute soak's worth of samples (about 200,000)
// against 100 events.
func BenchmarkAnalyze(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	samples := randomSamples(rng, 200000)
	var events []Event
	for i := range 100 {
		events = append(events, event(i, "k", i*80000, i*80000+10000))
	}
	for b.Loop() {
		Analyze(samples, events, settle)
	}
}
