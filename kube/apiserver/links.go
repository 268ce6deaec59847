package apiserver

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/sllbrd/sllbrd/kube/informer"
)

// link is one informer's ListerWatcher, wrapped to tell the Source's
// health what the calls show: a list, a watch that cannot start, or an
// error in a watch stream interrupts the informer's view of the server;
// the watch streams open say whether it is connected. The informer's own
// reflector and the resumer's consistency checks both list through it.
type link struct {
	kind     string // the watched kind, for reasons and logs
	lw       cache.ListerWatcherWithContext
	health   *health
	informer *informer.Informer
	changed  chan struct{} // the informer's cache changed (capacity 1)
}

func newLink(kind string, lw cache.ListerWatcherWithContext, h *health) *link {
	h.register(kind)
	return &link{kind: kind, lw: lw, health: h, changed: make(chan struct{}, 1)}
}

// ListWithContext lists through the wrapped ListerWatcher.
func (l *link) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := l.lw.ListWithContext(ctx, opts)
	if err != nil && ctx.Err() == nil {
		l.health.interrupted(fmt.Errorf("list %s: %w", l.kind, err))
	}
	return obj, err
}

// WatchWithContext starts a watch through the wrapped ListerWatcher and
// tracks its stream. A refused watch-list request (a server without the
// WatchList feature) is not an interruption: the reflector falls back to
// a list, whose outcome counts.
func (l *link) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.lw.WatchWithContext(ctx, opts)
	if err != nil {
		watchList := opts.SendInitialEvents != nil && *opts.SendInitialEvents
		if ctx.Err() == nil && !watchList {
			l.health.interrupted(fmt.Errorf("watch %s: %w", l.kind, err))
		}
		return nil, err
	}
	return l.track(w), nil
}

// IsWatchListSemanticsUnSupported passes on what the wrapped
// ListerWatcher says (see kube/apigate).
func (l *link) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(l.lw)
}

// List implements the deprecated cache.Lister.
func (l *link) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// Watch implements the deprecated cache.Watcher.
func (l *link) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// trackedWatch passes a watch stream's events on, noting errors in it and
// its end.
type trackedWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func (l *link) track(inner watch.Interface) watch.Interface {
	t := &trackedWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	l.health.streamOpened(l.kind)
	go func() {
		defer l.health.streamClosed(l.kind)
		defer close(t.out)
		for ev := range inner.ResultChan() {
			if ev.Type == watch.Error { // e.g. 410 Gone: the reflector lists again
				l.health.interrupted(fmt.Errorf("watch %s: %w", l.kind, apierrors.FromObject(ev.Object)))
			}
			select {
			case t.out <- ev:
			case <-t.stop:
				return
			}
		}
	}()
	return t
}

// Stop ends the stream.
func (t *trackedWatch) Stop() {
	t.once.Do(func() { close(t.stop) })
	t.inner.Stop()
}

// ResultChan returns the stream's events.
func (t *trackedWatch) ResultChan() <-chan watch.Event { return t.out }
