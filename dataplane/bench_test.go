package dataplane

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/parallel"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

// BenchmarkDecideCounterShards decides TCP flows to one route and Service
// from every core at once, each reader with its own Decision. own-shard is
// how sllbrd counts (every Decision its own counter shard); shared-shard
// puts every Decision on one shard, as the counters were before sharding:
// the difference is the cost of readers writing the same cache lines.
func BenchmarkDecideCounterShards(b *testing.B) {
	e, _ := newTestEngine(b, testState())
	pkts := make([][]byte, 1024)
	for i := range pkts {
		c := netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})
		pkts[i] = testpkt.Packet(flow(c, vip4, 6, uint16(1024+i), 80), make([]byte, 64), testpkt.Options{})
	}
	workers := runtime.GOMAXPROCS(0)
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "own-shard", true: "shared-shard"}[shared]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			parallel.Bench(b, workers, func(w int) func(int) {
				d := NewDecision()
				if shared {
					d.shard = 0
				} else {
					d.shard = uint32(w)
				}
				return func(n int) {
					for i := range n {
						p := pkts[i&1023]
						e.Decide(p, len(p), 0, d)
					}
				}
			})
		})
	}
}
