package bfd

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestWaitTickGap: Run's wait for its next tick lasts at least tickGap
// however often the server is poked (every received packet pokes it, and
// every tick visits every session: at 2,000 sessions ticking at each poke
// spent a core and held s.mu so long that the listeners' buffers
// overflowed); a poke once the gap has passed ends the wait at once, long
// before the next deadline; a cancelled context or Shutdown's stop ends Run.
func TestWaitTickGap(t *testing.T) {
	s := NewServer()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	ctx := context.Background()
	storm, calm := context.WithCancel(ctx)
	stormDone := make(chan struct{})
	go func() {
		defer close(stormDone)
		for storm.Err() == nil {
			s.poke()
			runtime.Gosched()
		}
	}()
	for range 20 {
		start := time.Now()
		if !s.waitTick(ctx, timer, start) { // a deadline already passed
			t.Fatal("waitTick ended Run")
		}
		if d := time.Since(start); d < tickGap {
			t.Fatalf("poked without pause: the wait lasted %v, want at least %v", d, tickGap)
		}
	}
	calm()
	<-stormDone
	select { // the storm's last poke
	case <-s.wake:
	default:
	}

	start := time.Now()
	go func() {
		time.Sleep(3 * tickGap)
		s.poke()
	}()
	if !s.waitTick(ctx, timer, start.Add(time.Hour)) {
		t.Fatal("waitTick ended Run")
	}
	if d := time.Since(start); d < 3*tickGap || d > 10*time.Second {
		t.Fatalf("poked after %v: the wait lasted %v, want it to end at the poke", 3*tickGap, d)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if s.waitTick(cancelled, timer, time.Now().Add(time.Hour)) {
		t.Error("waitTick with its context done: want Run to end")
	}
	close(s.stop)
	if s.waitTick(ctx, timer, time.Now().Add(time.Hour)) {
		t.Error("waitTick after stop: want Run to end")
	}
}
