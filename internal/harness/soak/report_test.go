package soak

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func TestPercentiles(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		in            []time.Duration
		p50, p99, top int
	}{
		{nil, 0, 0, 0},
		{ms(7), 7, 7, 7},
		{ms(3, 1, 2), 2, 3, 3},
		{ms(4, 1, 3, 2), 2, 4, 4},
		// 200 values 1..200: nearest rank p50 is the 100th, p99 the 198th.
		{ms(func() []int {
			var v []int
			for i := 200; i >= 1; i-- {
				v = append(v, i)
			}
			return v
		}()...), 100, 198, 200},
	} {
		p50, p99, top := Percentiles(tc.in)
		if p50 != time.Duration(tc.p50)*time.Millisecond || p99 != time.Duration(tc.p99)*time.Millisecond ||
			top != time.Duration(tc.top)*time.Millisecond {
			t.Errorf("Percentiles(%d values) = %v %v %v, want %dms %dms %dms", len(tc.in), p50, p99, top, tc.p50, tc.p99, tc.top)
		}
	}
}

// reportBound is the bound of the faults of seqs as the soak computes it:
// the largest of their kinds' spec bounds.
func reportBound(specs []Spec, events []Event) func([]int) time.Duration {
	return func(seqs []int) time.Duration {
		var b time.Duration
		for _, q := range seqs {
			for _, ev := range events {
				if ev.Seq != q {
					continue
				}
				for _, sp := range specs {
					if sp.Kind == ev.Kind {
						b = max(b, sp.Bound)
					}
				}
			}
		}
		return b
	}
}

func reportEvent(seq int, k Kind) Event { return Event{Fault: Fault{Seq: seq, Kind: k}} }

// reportInput is a soak with three lb-kills (one overlapping a bird restart
// with a smaller bound, one losing nothing), a bird restart, a kind that
// never ran, unexplained items, and broken connections inside and outside
// the faults.
func reportInput() (Analysis, []Spec, []Event, []Broken) {
	specs := []Spec{
		{Kind: "lb-kill", Weight: 1, Bound: 3 * time.Second},
		{Kind: "bird-restart", Weight: 1, Bound: 2 * time.Second},
		{Kind: "never-ran", Weight: 1},
	}
	events := []Event{reportEvent(0, "lb-kill"), reportEvent(1, "bird-restart"), reportEvent(2, "lb-kill"), reportEvent(3, "lb-kill")}
	a := Analysis{
		Runs: []Run{
			{Kind: "udp4", Loss: 1200 * time.Millisecond, Events: []int{0}},
			{Kind: "tcp4", Loss: 700 * time.Millisecond, Events: []int{0}},
			// Over the bird restart and an lb-kill: the lb-kill's (3 s > 2 s).
			{Kind: "udp6", Loss: 1500 * time.Millisecond, Events: []int{1, 2}},
			{Kind: "udp4", Loss: 600 * time.Millisecond}, // unexplained: nobody's
		},
		Stalls: []Stall{
			{Kind: "stream4", RTT: 2 * time.Second, Events: []int{1, 2}},
			{Kind: "stream6", RTT: 400 * time.Millisecond, Events: []int{1}},
			{Kind: "stream6", RTT: 900 * time.Millisecond},
		},
	}
	broken := []Broken{
		{Kind: "lb-kill", Why: "Maglev moved its flow to target-2"},
		{Kind: "lb-kill", Why: "Maglev moved its flow to target-3"},
		{Kind: "lb-kill", Why: "its target removed"},
		{Kind: "bird-restart", Why: "broken | reset"},
		{Kind: NoFault, Why: "broken"},
		{Kind: "surprise", Why: "broken"},
	}
	return a, specs, events, broken
}

func TestReport(t *testing.T) {
	a, specs, events, broken := reportInput()
	got := Report(a, specs, events, broken, reportBound(specs, events))
	want := []Row{
		// Losses 1.2 s (#0), 1.5 s (#2), 0 (#3): the nearest-rank p50 of
		// three is the second.
		{Kind: "lb-kill", Count: 3, LossP50: 1200 * time.Millisecond, LossP99: 1500 * time.Millisecond, LossMax: 1500 * time.Millisecond,
			Bound: 3 * time.Second, StreamStallMax: 2 * time.Second, Broken: 3,
			Why: map[string]int{"Maglev moved its flow": 2, "its target removed": 1}},
		// The 1.5 s run and the 2 s stall it overlaps went to lb-kill #2.
		{Kind: "bird-restart", Count: 1, Bound: 2 * time.Second, StreamStallMax: 400 * time.Millisecond, Broken: 1,
			Why: map[string]int{"broken | reset": 1}},
		{Kind: "never-ran", Why: map[string]int{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows\n got %+v\nwant %+v", got, want)
	}
}

// TestReportCharge: an item counts for the fault of the largest bound it
// falls in, the first in its Events of those with the largest.
func TestReportCharge(t *testing.T) {
	specs := []Spec{
		{Kind: "short", Bound: time.Second},
		{Kind: "long", Bound: 4 * time.Second},
		{Kind: "long-too", Bound: 4 * time.Second},
	}
	events := []Event{reportEvent(0, "short"), reportEvent(1, "long"), reportEvent(2, "long-too")}
	for _, tc := range []struct {
		name   string
		events []int
		want   Kind // the row charged; the others get nothing
	}{
		{"larger bound later", []int{0, 1}, "long"},
		{"larger bound first", []int{1, 0}, "long"},
		{"tie: the first", []int{0, 1, 2}, "long"},
		{"tie in the other order", []int{2, 1}, "long-too"},
		{"alone", []int{0}, "short"},
	} {
		a := Analysis{
			Runs:   []Run{{Loss: 700 * time.Millisecond, Events: tc.events}},
			Stalls: []Stall{{RTT: 500 * time.Millisecond, Events: tc.events}},
		}
		rows := Report(a, specs, events, nil, reportBound(specs, events))
		for _, r := range rows {
			var loss, stall time.Duration
			if r.Kind == tc.want {
				loss, stall = 700*time.Millisecond, 500*time.Millisecond
			}
			if r.LossMax != loss || r.LossP50 != loss || r.StreamStallMax != stall {
				t.Errorf("%s: %s row loss max %v p50 %v stall %v, want %v %v %v", tc.name, r.Kind, r.LossMax, r.LossP50, r.StreamStallMax, loss, loss, stall)
			}
		}
	}
}

// TestReportNoLossCounts: an event that lost nothing counts as 0, so a
// kind whose loss is rare has a p50 of 0.
func TestReportNoLossCounts(t *testing.T) {
	specs := []Spec{{Kind: "lb-kill", Bound: 3 * time.Second}}
	events := []Event{reportEvent(0, "lb-kill"), reportEvent(1, "lb-kill"), reportEvent(2, "lb-kill")}
	a := Analysis{Runs: []Run{{Loss: 900 * time.Millisecond, Events: []int{1}}}}
	r := Report(a, specs, events, nil, reportBound(specs, events))[0]
	if r.Count != 3 || r.LossP50 != 0 || r.LossP99 != 900*time.Millisecond || r.LossMax != 900*time.Millisecond {
		t.Errorf("row %+v, want 3 events, p50 0, p99 and max 900ms", r)
	}
}

func TestReportSpecOrder(t *testing.T) {
	specs := []Spec{{Kind: "zeta"}, {Kind: "alpha"}, {Kind: "mid"}}
	events := []Event{reportEvent(0, "alpha"), reportEvent(1, "mid"), reportEvent(2, "zeta"), reportEvent(3, "alpha")}
	var kinds []Kind
	var counts []int
	for _, r := range Report(Analysis{}, specs, events, nil, reportBound(specs, events)) {
		kinds, counts = append(kinds, r.Kind), append(counts, r.Count)
	}
	if want := []Kind{"zeta", "alpha", "mid"}; !reflect.DeepEqual(kinds, want) || !reflect.DeepEqual(counts, []int{1, 2, 1}) {
		t.Errorf("rows %v with counts %v, want %v with 1 2 1", kinds, counts, want)
	}
}

func TestReasonClass(t *testing.T) {
	for in, want := range map[string]string{
		"Maglev moved its flow to target-4": "Maglev moved its flow",
		"its target removed":                "its target removed",
		"broken":                            "broken",
		"moved by Maglev":                   "moved by Maglev",
	} {
		if got := reasonClass(in); got != want {
			t.Errorf("reasonClass(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMarkdownGolden pins the report's table (go test -run
// TestMarkdownGolden -update rewrites it).
func TestMarkdownGolden(t *testing.T) {
	a, specs, events, broken := reportInput()
	got := Markdown(Report(a, specs, events, broken, reportBound(specs, events)))
	path := filepath.Join("testdata", "report.md.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("Markdown:\n%s\nwant (%s):\n%s", got, path, want)
	}
}
