package reconcile

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/model"
)

type recorder struct {
	mu      sync.Mutex
	applied []Desired
	fail    int // fail this many applies first
	notify  chan struct{}
	during  func() // called inside every apply, if set
}

func (r *recorder) apply(_ context.Context, d Desired) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() { r.notify <- struct{}{} }()
	if r.during != nil {
		r.during()
	}
	if r.fail > 0 {
		r.fail--
		return errors.New("kernel says no")
	}
	r.applied = append(r.applied, d)
	return nil
}

func (r *recorder) last() (Desired, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.applied) == 0 {
		return Desired{}, 0
	}
	return r.applied[len(r.applied)-1], len(r.applied)
}

func start(t *testing.T, r *recorder, opts ...Option) *Loop {
	t.Helper()
	r.notify = make(chan struct{}, 100)
	l := New(r.apply, append([]Option{WithMinInterval(20 * time.Millisecond), WithBackoff(5*time.Millisecond, 20*time.Millisecond)}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// wait waits until cond holds, checking after every apply and every
// millisecond (the loop records an apply's outcome after it returns).
func wait(t *testing.T, r *recorder, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-r.notify:
		case <-time.After(time.Millisecond):
		case <-deadline:
			t.Fatal("condition not reached in 5 s")
		}
	}
}

func gen(g uint64) *model.State { return &model.State{Generation: g} }

func TestNothingBeforeFirstConfiguration(t *testing.T) {
	r := &recorder{}
	l := start(t, r)
	l.SetGateways([]route.Nexthop{{Addr: netip.MustParseAddr("192.0.2.1"), Interface: "eth0"}})
	time.Sleep(100 * time.Millisecond)
	if _, n := r.last(); n != 0 {
		t.Fatalf("%d applies before any configuration", n)
	}
	if s := l.Status(); s.Ready() || s.Reason() != "no configuration received yet" {
		t.Fatalf("status %+v reason %q", s, s.Reason())
	}
	l.SetState(gen(1), time.Now())
	// The loop records the apply's outcome after the apply returns: wait
	// for both.
	wait(t, r, func() bool { _, n := r.last(); return n == 1 && l.Status().Applied == 1 })
	if d, _ := r.last(); len(d.Gateways) != 1 {
		t.Errorf("first apply lacks the gateways set earlier: %+v", d)
	}
	if !l.Status().Ready() {
		t.Errorf("not ready after applying: %+v", l.Status())
	}
}

func TestBurstIsCoalesced(t *testing.T) {
	r := &recorder{}
	l := start(t, r)
	first := time.Now()
	for g := uint64(1); g <= 200; g++ {
		l.SetState(gen(g), time.Now())
	}
	wait(t, r, func() bool { d, _ := r.last(); return d.State != nil && d.State.Generation == 200 })
	_, n := r.last()
	if n > 3 {
		t.Errorf("200 changes in a burst took %d applies", n)
	}
	if d, _ := r.last(); n == 1 && d.Changed.Before(first) {
		t.Errorf("Changed %v precedes the burst", d.Changed)
	}
}

func TestFailuresAreRetriedUntilReady(t *testing.T) {
	r := &recorder{fail: 3}
	l := start(t, r, WithResync(0))
	l.SetState(gen(7), time.Now())
	wait(t, r, func() bool { _, n := r.last(); return n == 1 && l.Status().Attempts == 0 })
	s := l.Status()
	if !s.Ready() || s.Applied != 7 || s.Attempts != 0 {
		t.Fatalf("status after recovery: %+v", s)
	}
}

func TestNotReadyWhileFailing(t *testing.T) {
	r := &recorder{fail: 1 << 30}
	l := start(t, r)
	l.SetState(gen(2), time.Now())
	wait(t, r, func() bool { return l.Status().Attempts >= 2 })
	if s := l.Status(); s.Ready() || s.Err == nil {
		t.Fatalf("ready while every apply fails: %+v", s)
	}
}

func TestGatewayChangeReapplies(t *testing.T) {
	r := &recorder{}
	l := start(t, r)
	l.SetState(gen(1), time.Now())
	wait(t, r, func() bool { _, n := r.last(); return n == 1 })
	gws := []route.Nexthop{{Addr: netip.MustParseAddr("192.0.2.1"), Interface: "eth0"}}
	l.SetGateways(gws)
	wait(t, r, func() bool { d, _ := r.last(); return len(d.Gateways) == 1 })
	l.SetGateways(gws) // unchanged: no apply
	time.Sleep(60 * time.Millisecond)
	if _, n := r.last(); n != 2 {
		t.Errorf("applies = %d, want 2", n)
	}
}

// TestRunByReapplies: an apply that asks for another run by a time gets it,
// with the same desired state, though nothing changed and resync is off.
func TestRunByReapplies(t *testing.T) {
	r := &recorder{}
	var l *Loop
	asked := false
	r.during = func() {
		if !asked {
			asked = true
			l.RunBy(time.Now().Add(30 * time.Millisecond))
		}
	}
	l = start(t, r, WithResync(0))
	l.SetState(gen(4), time.Now())
	wait(t, r, func() bool { _, n := r.last(); return n == 2 })
	if d, _ := r.last(); d.State.Generation != 4 {
		t.Errorf("re-applied generation %d, want 4", d.State.Generation)
	}
	time.Sleep(100 * time.Millisecond)
	if _, n := r.last(); n != 2 {
		t.Errorf("%d applies, want 2: one request, one re-apply", n)
	}
}

func TestGatewayGoneReapplies(t *testing.T) {
	r := &recorder{}
	l := start(t, r, WithResync(0))
	l.SetState(gen(1), time.Now())
	wait(t, r, func() bool { _, n := r.last(); return n == 1 })
	for i, gone := range []bool{true, false} {
		l.SetGatewayGone(gone)
		wait(t, r, func() bool { _, n := r.last(); return n == i+2 })
		if d, _ := r.last(); d.GatewayGone != gone || d.State.Generation != 1 {
			t.Fatalf("apply %d: %+v, want GatewayGone %v with generation 1", i+2, d, gone)
		}
	}
	if s := l.Status(); !s.Ready() {
		t.Fatalf("status %+v", s)
	}
}

// TestResync: Resync applies the same desired state again, at once rather
// than at the periodic resync, and does nothing before the first state.
func TestResync(t *testing.T) {
	r := &recorder{}
	l := start(t, r, WithResync(time.Hour))
	l.Resync()
	time.Sleep(100 * time.Millisecond)
	if _, n := r.last(); n != 0 {
		t.Fatalf("%d applies before any state", n)
	}
	l.SetState(gen(7), time.Now())
	wait(t, r, func() bool { _, n := r.last(); return n == 1 })
	l.Resync()
	wait(t, r, func() bool { _, n := r.last(); return n == 2 })
	if d, _ := r.last(); d.State.Generation != 7 || !d.Changed.IsZero() {
		t.Errorf("resync applied generation %d changed at %v, want 7 and no change time", d.State.Generation, d.Changed)
	}
}
