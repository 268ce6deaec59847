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

// reportAnalysis is an analysis with three lb-kills, a bird restart without
// loss, a kind without a spec and unexplained items.
func reportAnalysis() (Analysis, []Spec) {
	el := func(seq int, k Kind, worst, stall time.Duration, breaks map[string]int) EventLoss {
		return EventLoss{Event: Event{Fault: Fault{Seq: seq, Kind: k}}, Worst: worst, StallMax: stall, Breaks: breaks}
	}
	a := Analysis{
		Events: []EventLoss{
			el(0, "lb-kill", 1200*time.Millisecond, 300*time.Millisecond, map[string]int{"connection reset": 1}),
			el(1, "bird-restart", 0, 0, nil),
			el(2, "lb-kill", 400*time.Millisecond, 2*time.Second, map[string]int{"connection reset": 2, "EOF | closed": 1}),
			el(3, "lb-kill", 800*time.Millisecond, 0, nil),
			el(4, "surprise", 50*time.Millisecond, 0, nil),
		},
		Unexplained:       []Run{{Kind: "udp4", Loss: 600 * time.Millisecond}, {Kind: "tcp6", Loss: 200 * time.Millisecond}},
		UnexplainedStalls: []Stall{{Kind: "stream4", RTT: 900 * time.Millisecond}},
		UnexplainedBreaks: []Break{{Kind: "stream6", Err: "timeout"}},
	}
	specs := []Spec{
		{Kind: "lb-kill", Weight: 1, Bound: 3 * time.Second},
		{Kind: "bird-restart", Weight: 1, Bound: 2 * time.Second},
		{Kind: "never-ran", Weight: 1},
	}
	return a, specs
}

func TestRows(t *testing.T) {
	a, specs := reportAnalysis()
	got := Rows(a, specs)
	want := []Row{
		{Kind: "lb-kill", Count: 3, LossP50: 800 * time.Millisecond, LossP99: 1200 * time.Millisecond, LossMax: 1200 * time.Millisecond,
			Bound: 3 * time.Second, StreamStallMax: 2 * time.Second, Broken: 4, Why: map[string]int{"connection reset": 3, "EOF | closed": 1}},
		{Kind: "bird-restart", Count: 1, Bound: 2 * time.Second, Why: map[string]int{}},
		{Kind: "never-ran", Why: map[string]int{}},
		{Kind: "surprise", Count: 1, LossP50: 50 * time.Millisecond, LossP99: 50 * time.Millisecond, LossMax: 50 * time.Millisecond, Why: map[string]int{}},
		{Kind: NoFault, Count: 2, LossP50: 200 * time.Millisecond, LossP99: 600 * time.Millisecond, LossMax: 600 * time.Millisecond,
			StreamStallMax: 900 * time.Millisecond, Broken: 1, Why: map[string]int{"timeout": 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows\n got %+v\nwant %+v", got, want)
	}
	if rows := Rows(Analysis{}, specs[:1]); len(rows) != 1 {
		t.Errorf("nothing unexplained: %d rows, want 1 (no %s row)", len(rows), NoFault)
	}
}

// TestMarkdownGolden pins the report's table (go test -run
// TestMarkdownGolden -update rewrites it).
func TestMarkdownGolden(t *testing.T) {
	a, specs := reportAnalysis()
	got := Markdown(Rows(a, specs))
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
