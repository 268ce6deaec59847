package informer

import (
	"context"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// Retry timing (see the package documentation).
const (
	// MinRun is how long a ListAndWatch must have run for its end to be
	// followed by a relist at once.
	MinRun = time.Second
	// BackoffInit is the first wait after a failure, and the reflector's
	// wait before it retries a refused watch.
	BackoffInit = 250 * time.Millisecond
	// BackoffMax caps the wait after consecutive failures (before jitter).
	BackoffMax = 30 * time.Second
	// backoffJitter is the largest share of a wait added to it at random.
	backoffJitter = 0.5
)

// Options configure an Informer.
type Options struct {
	// Indexers index the store (none if nil).
	Indexers cache.Indexers
	// Transform is applied to every object before it is stored (e.g. to
	// trim what the user never reads); nil stores objects as received.
	Transform cache.TransformFunc
	// Handler is told of every change (see the package contract); nil:
	// nobody is.
	Handler cache.ResourceEventHandler
	// OnError is called with the error of each failed ListAndWatch, e.g.
	// to log it; nil: the errors are not reported.
	OnError func(error)
}

// Informer keeps a store of one kind of object in step with the server.
type Informer struct {
	reflector *cache.Reflector
	store     *store
	onError   func(error)
}

// New returns an informer that lists and watches objects like example
// through lw. It does nothing before RunWithContext.
func New(lw cache.ListerWatcher, example runtime.Object, o Options) *Informer {
	indexers := o.Indexers
	if indexers == nil {
		indexers = cache.Indexers{}
	}
	handler := o.Handler
	if handler == nil {
		handler = cache.ResourceEventHandlerFuncs{}
	}
	s := &store{
		indexer:   cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, indexers),
		transform: o.Transform,
		handler:   handler,
	}
	// Factor 0: a constant wait with jitter for the watches the server
	// refuses; the gate in front of lw waits out an outage.
	backoff := &wait.Backoff{Duration: BackoffInit, Jitter: backoffJitter}
	r := cache.NewReflectorWithOptions(lw, example, s, cache.ReflectorOptions{Backoff: backoff})
	return &Informer{reflector: r, store: s, onError: o.OnError}
}

// GetStore returns the store (safe for concurrent reads).
func (i *Informer) GetStore() cache.Store { return i.store.indexer }

// GetIndexer returns the store with its indexes.
func (i *Informer) GetIndexer() cache.Indexer { return i.store.indexer }

// HasSynced reports whether the first list is stored and handled.
func (i *Informer) HasSynced() bool { return i.store.synced.Load() }

// RunWithContext lists and watches until ctx ends (see the package
// documentation for when it lists again). Call it once.
func (i *Informer) RunWithContext(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		start := time.Now()
		err := i.reflector.ListAndWatchWithContext(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil && i.onError != nil {
			i.onError(err)
		}
		var d time.Duration
		d, failures = retryAfter(failures, err, time.Since(start))
		if d == 0 {
			continue
		}
		d += time.Duration(rand.Float64() * backoffJitter * float64(d))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// retryAfter returns how long to wait before the next ListAndWatch and the
// count of consecutive failures, given the count before and how the last
// one ended (err) after running for ran: at once after one that ran at
// least MinRun without an error; otherwise BackoffInit doubled per
// earlier consecutive failure, up to BackoffMax (jitter not included).
func retryAfter(failures int, err error, ran time.Duration) (time.Duration, int) {
	if err == nil && ran >= MinRun {
		return 0, 0
	}
	d := BackoffInit << min(failures, 10)
	return min(d, BackoffMax), failures + 1
}
