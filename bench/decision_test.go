package bench

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/internal/harness/parallel"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

func engine(tb testing.TB) *dataplane.Engine {
	tb.Helper()
	e := dataplane.NewEngine()
	p, err := e.Build(State())
	if err != nil {
		tb.Fatal(err)
	}
	if len(p.Problems) > 0 {
		tb.Fatalf("bench configuration has problems: %v", p.Problems)
	}
	e.Commit(p)
	return e
}

func loadMixes(tb testing.TB) map[string][][]byte {
	tb.Helper()
	out := map[string][][]byte{}
	for _, m := range Mixes {
		pkts, err := testpkt.ReadPcap(filepath.Join("testdata", m.Name+".pcap"))
		if err != nil {
			tb.Fatal(err)
		}
		out[m.Name] = pkts
	}
	return out
}

// BenchmarkDecision reports the cost of one decision, averaged over every
// packet of each mix (ns/op is ns per packet).
func BenchmarkDecision(b *testing.B) {
	mixes := loadMixes(b)
	for _, m := range Mixes {
		pkts := mixes[m.Name]
		b.Run(m.Name, func(b *testing.B) {
			e := engine(b)
			d := dataplane.NewDecision()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p := pkts[i]
				e.Decide(p, len(p), uint64(i), d)
				if i++; i == len(pkts) {
					i = 0
				}
			}
		})
	}
}

// BenchmarkDecisionParallel runs the decision from every core at once, as
// one nfqueue reader per CPU does, sharing the engine and its counters.
// Each goroutine has its own Decision, made before the timer starts.
func BenchmarkDecisionParallel(b *testing.B) {
	pkts := loadMixes(b)["mix-ipv4"]
	e := engine(b)
	b.ReportAllocs()
	parallel.Bench(b, runtime.GOMAXPROCS(0), func(w int) func(n int) {
		d := dataplane.NewDecision()
		return func(n int) {
			i := w * len(pkts) / runtime.GOMAXPROCS(0)
			for range n {
				p := pkts[i]
				e.Decide(p, len(p), uint64(i), d)
				if i++; i == len(pkts) {
					i = 0
				}
			}
		}
	})
}

// TestDecisionAllocatesNothing pins the hot path at zero allocations over
// every packet of every mix.
func TestDecisionAllocatesNothing(t *testing.T) {
	e := engine(t)
	d := dataplane.NewDecision()
	for name, pkts := range loadMixes(t) {
		allocs := testing.AllocsPerRun(3, func() {
			for i, p := range pkts {
				e.Decide(p, len(p), uint64(i), d)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per pass over %d packets", name, allocs, len(pkts))
		}
	}
}

// TestMixesExerciseEveryPath makes sure the benchmark measures what it
// claims: the mixes hit balancing, fragments, ICMP errors and the drops.
func TestMixesExerciseEveryPath(t *testing.T) {
	e := engine(t)
	d := dataplane.NewDecision()
	for _, pkts := range loadMixes(t) {
		for i, p := range pkts {
			e.Decide(p, len(p), uint64(i), d)
		}
	}
	for _, r := range []dataplane.Reason{dataplane.ReasonBalanced, dataplane.ReasonFragmentFollowed,
		dataplane.ReasonNoRoute, dataplane.ReasonUndecodable} {
		if n, _ := e.ReasonCount(r); n == 0 {
			t.Errorf("no packet of the mixes was decided %v", r)
		}
	}
	if n, _ := e.ReasonCount(dataplane.ReasonBalanced); n < 5000 {
		t.Errorf("only %d packets balanced", n)
	}
}
