package classify

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// BenchmarkLookup classifies packets that each satisfy some route, cycling
// over 1024 of them so that the benchmark touches many VIPs of the table.
func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{1, 100, 10000} {
		b.Run("routes="+strconv.Itoa(n), func(b *testing.B) {
			routes := realisticRoutes(n)
			table, errs := Compile(routes)
			if len(errs) > 0 {
				b.Fatal(errs)
			}
			pkts := packetsFor(routes, 1024, rand.New(rand.NewPCG(7, 8)))
			b.ReportAllocs()
			i, hits := 0, 0
			for b.Loop() {
				if _, ok := table.Lookup(&pkts[i&1023]); ok {
					hits++
				}
				i++
			}
			if hits != i {
				b.Fatalf("%d of %d lookups matched", hits, i)
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run("routes="+strconv.Itoa(n), func(b *testing.B) {
			routes := realisticRoutes(n)
			b.ReportAllocs()
			for b.Loop() {
				if _, errs := Compile(routes); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}
