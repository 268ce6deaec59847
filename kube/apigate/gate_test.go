package apigate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// fakeLW fails its requests while down is set.
type fakeLW struct {
	down          atomic.Bool
	lists, watchs atomic.Int32
}

var errRefused = errors.New("connection refused")

func (f *fakeLW) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	f.lists.Add(1)
	if f.down.Load() {
		return nil, errRefused
	}
	return &metav1.List{}, nil
}

func (f *fakeLW) WatchWithContext(context.Context, metav1.ListOptions) (watch.Interface, error) {
	f.watchs.Add(1)
	if f.down.Load() {
		return nil, errRefused
	}
	return watch.NewFake(), nil
}

// TestGateHoldsRequestsDuringAnOutage: requests pass while the server
// answers; after a failure, the next request waits until a probe succeeds
// and reaches the server only then: an outage costs one failed request.
func TestGateHoldsRequestsDuringAnOutage(t *testing.T) {
	var serverDown atomic.Bool
	probes := atomic.Int32{}
	g := New(func(context.Context) error {
		probes.Add(1)
		if serverDown.Load() {
			return errRefused
		}
		return nil
	}, time.Millisecond)
	lw := &fakeLW{}
	gated := g.Wrap(lw)
	ctx := context.Background()
	if _, err := gated.ListWithContext(ctx, metav1.ListOptions{}); err != nil || probes.Load() != 0 {
		t.Fatalf("list while up: %v, %d probes (want none)", err, probes.Load())
	}

	serverDown.Store(true)
	lw.down.Store(true)
	if _, err := gated.WatchWithContext(ctx, metav1.ListOptions{}); !errors.Is(err, errRefused) {
		t.Fatalf("watch as the server goes down: %v, want the refusal", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := gated.ListWithContext(ctx, metav1.ListOptions{})
		done <- err
	}()
	for probes.Load() < 5 { // the list waits, probing
		time.Sleep(time.Millisecond)
	}
	if n := lw.lists.Load(); n != 1 {
		t.Fatalf("%d lists reached the server while it was down, want only the first", n)
	}
	lw.down.Store(false)
	serverDown.Store(false)
	if err := <-done; err != nil {
		t.Fatalf("list once the server answers: %v", err)
	}
	if n := lw.lists.Load(); n != 2 {
		t.Fatalf("%d lists, want 2", n)
	}
}

// TestGateWaitEndsWithItsContext: a waiting request gives up with its
// context.
func TestGateWaitEndsWithItsContext(t *testing.T) {
	g := New(func(context.Context) error { return errRefused }, time.Millisecond)
	g.Failed()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want the context's deadline", err)
	}
}

// TestReadyzOfAFake: client-go's fake has no REST client: nothing to
// probe, the probe succeeds.
func TestReadyzOfAFake(t *testing.T) {
	if err := Readyz(fake.NewClientset().Discovery())(context.Background()); err != nil {
		t.Fatalf("probe of a fake: %v", err)
	}
}

// TestWrapSaysWhetherTheClientStreamsWatchLists: the reflector asks the
// ListerWatcher whether its client can stream a watch-list; a gate must not
// hide a fake's no (the reflector would wait for initial events forever).
func TestWrapSaysWhetherTheClientStreamsWatchLists(t *testing.T) {
	g := New(func(context.Context) error { return nil }, time.Millisecond)
	lw := &cache.ListWatch{}
	for _, c := range []struct {
		name   string
		client any
		want   bool
	}{
		{"client-go's fake", fake.NewClientset(), true},
		{"a client that streams", struct{}{}, false},
	} {
		wrapped := g.Wrap(cache.ToListerWatcherWithContext(cache.ToListWatcherWithWatchListSemantics(lw, c.client)))
		if got := watchlist.DoesClientNotSupportWatchListSemantics(wrapped); got != c.want {
			t.Errorf("%s: unsupported = %v, want %v", c.name, got, c.want)
		}
	}
	if watchlist.DoesClientNotSupportWatchListSemantics(g.Wrap(lw)) {
		t.Error("a plain ListWatch wrapped: unsupported")
	}
}
