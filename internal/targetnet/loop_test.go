package targetnet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// runLoop runs a loop over k until the test ends; outcomes arrive on the
// returned channel.
func runLoop(t *testing.T, k *fakeKernel, opts ...LoopOption) (*Loop, chan Outcome) {
	t.Helper()
	out := make(chan Outcome, 100)
	l := NewLoop(New(k), func(o Outcome) { out <- o }, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return l, out
}

func next(t *testing.T, out chan Outcome) Outcome {
	t.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no apply within 10s")
	}
	return Outcome{}
}

func TestLoopAppliesTheLatestAndRetries(t *testing.T) {
	k := newFakeKernel()
	boom := errors.New("boom")
	failures := 2
	k.fail = func(op string) error {
		if strings.HasPrefix(op, "add rule ipv4 pref 10200") && failures > 0 {
			failures--
			return boom
		}
		return nil
	}
	l, out := runLoop(t, k, WithBackoff(time.Millisecond, 5*time.Millisecond), WithResync(time.Hour))
	select {
	case o := <-out:
		t.Fatalf("applied before any Set: %+v", o)
	case <-time.After(50 * time.Millisecond):
	}
	l.Set(7, Desired{Gateways: []Gateway{gatewayA()}})
	for range 2 { // the injected failures, retried without a new Set
		if o := next(t, out); !errors.Is(o.Err, boom) || o.Generation != 7 {
			t.Fatalf("outcome %+v, want the injected failure of generation 7", o)
		}
	}
	o := next(t, out)
	if o.Err != nil || o.Generation != 7 || o.Result.VIPCount() != 2 || o.Changed.IsZero() {
		t.Fatalf("outcome %+v", o)
	}
	l.Set(8, Desired{})
	if o := next(t, out); o.Err != nil || o.Generation != 8 || len(o.Result.Gateways) != 0 {
		t.Fatalf("outcome %+v", o)
	}
}

func TestLoopResyncs(t *testing.T) {
	k := newFakeKernel()
	l, out := runLoop(t, k, WithResync(20*time.Millisecond))
	l.Set(1, Desired{Gateways: []Gateway{gatewayA()}})
	next(t, out)
	// Someone deletes a rule: the next periodic apply restores it.
	k.mu.Lock()
	k.rules = k.rules[:len(k.rules)-1]
	k.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if o := next(t, out); o.Result.VIPCount() == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deleted rule was not restored")
		}
	}
}

// TestLoopClearStopsApplying: after Clear, neither resync nor a retry
// applies anything; the next Set applies again.
func TestLoopClearStopsApplying(t *testing.T) {
	k := newFakeKernel()
	l, out := runLoop(t, k, WithResync(10*time.Millisecond))
	l.Set(1, Desired{Gateways: []Gateway{gatewayA()}})
	next(t, out)
	l.Clear()
	// An apply running when Clear was called may still report; after it
	// none may come for many resync periods.
	select {
	case <-out:
	case <-time.After(30 * time.Millisecond):
	}
	select {
	case o := <-out:
		t.Fatalf("applied after Clear: %+v", o)
	case <-time.After(200 * time.Millisecond):
	}
	l.Set(2, Desired{})
	if o := next(t, out); o.Generation != 2 || o.Err != nil {
		t.Fatalf("outcome %+v", o)
	}
}
