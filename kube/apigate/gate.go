package apigate

import (
	"context"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

const (
	// ProbeTimeout bounds one probe.
	ProbeTimeout = 2 * time.Second
	// DefaultPeriod is the probes' period that the gates of sllbrd use: an
	// informer resumes within it of the server answering again, and a down
	// server gets four probes a second from each waiting client.
	DefaultPeriod = 250 * time.Millisecond
)

// Gate holds requests back after a failure until a probe succeeds.
type Gate struct {
	probe  func(context.Context) error
	period time.Duration

	mu   sync.Mutex // held while probing: one prober at a time
	down bool       // a request failed and no probe succeeded since
}

// New returns a gate that probes with probe every period while the API
// server does not answer.
func New(probe func(context.Context) error, period time.Duration) *Gate {
	return &Gate{probe: probe, period: period}
}

// Failed records a failed request: the next ones wait for a probe.
func (g *Gate) Failed() {
	g.mu.Lock()
	g.down = true
	g.mu.Unlock()
}

// Wait returns at once while no request has failed since the last probe
// succeeded; otherwise it probes every period until one succeeds, or until
// ctx ends (returning its error).
func (g *Gate) Wait(ctx context.Context) error {
	for {
		g.mu.Lock()
		if !g.down {
			g.mu.Unlock()
			return nil
		}
		pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		err := g.probe(pctx)
		cancel()
		if err == nil {
			g.down = false
		}
		g.mu.Unlock()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(g.period):
		}
	}
}

// ListerWatcher is what Wrap returns: both forms of client-go's interface
// (informers take the older, reflectors use the newer when present).
type ListerWatcher interface {
	cache.ListerWatcher
	cache.ListerWatcherWithContext
}

// Wrap returns lw with every list and watch passing through the gate.
func (g *Gate) Wrap(lw cache.ListerWatcherWithContext) ListerWatcher {
	return &gated{lw: lw, gate: g}
}

type gated struct {
	lw   cache.ListerWatcherWithContext
	gate *Gate
}

func (l *gated) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := l.gate.Wait(ctx); err != nil {
		return nil, err
	}
	obj, err := l.lw.ListWithContext(ctx, opts)
	if err != nil && ctx.Err() == nil {
		l.gate.Failed()
	}
	return obj, err
}

func (l *gated) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := l.gate.Wait(ctx); err != nil {
		return nil, err
	}
	w, err := l.lw.WatchWithContext(ctx, opts)
	if err != nil && ctx.Err() == nil {
		l.gate.Failed()
	}
	return w, err
}

// IsWatchListSemanticsUnSupported passes on what the wrapped
// ListerWatcher says: a client that cannot stream a watch-list (client-go's
// fakes) is not asked for one (watchlist.DoesClientNotSupportWatchListSemantics).
func (l *gated) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(l.lw)
}

// List implements the deprecated cache.Lister.
func (l *gated) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// Watch implements the deprecated cache.Watcher.
func (l *gated) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// Readyz returns a probe of the API server's /readyz through d. A client
// without a REST client (client-go's fakes) has nothing to probe: its
// probe succeeds.
func Readyz(d discovery.DiscoveryInterface) func(context.Context) error {
	rc := d.RESTClient()
	if rc == nil || reflect.ValueOf(rc).IsNil() {
		return func(context.Context) error { return nil }
	}
	return func(ctx context.Context) error { return rc.Get().AbsPath("/readyz").Do(ctx).Error() }
}
