// Package parallel runs a benchmark's operations on several goroutines
// without counting the harness: unlike testing.B.RunParallel, the
// goroutines and their state are made before the timer starts and waiting
// for them does not block, so a benchmark of code that allocates nothing
// reports 0 allocs/op at any -benchtime (-benchtime=1x included).
package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// Bench spreads b.N operations over workers goroutines, the calling one
// included. newWorker makes worker w's state and returns its loop, which
// runs n operations.
func Bench(b *testing.B, workers int, newWorker func(w int) func(n int)) {
	start := make(chan struct{})
	var done atomic.Int32
	runs := make([]func(int), workers)
	for w := range runs {
		runs[w] = newWorker(w)
	}
	share := func(w int) int {
		if w < b.N%workers {
			return b.N/workers + 1
		}
		return b.N / workers
	}
	for w := 1; w < workers; w++ {
		go func() {
			<-start
			runs[w](share(w))
			done.Add(1)
		}()
	}
	b.ResetTimer()
	close(start)
	runs[0](share(0))
	// A blocked goroutine may allocate its wait record: spin instead.
	for done.Load() < int32(workers-1) {
		runtime.Gosched()
	}
	b.StopTimer()
}
