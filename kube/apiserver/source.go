package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/sllbrd/sllbrd/kube/apigate"
	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/kube/translate"
)

// Defaults of the Source options.
const (
	// DefaultDebounce is how long the objects must stay unchanged before a
	// rebuild: the events of one kubectl apply come together.
	DefaultDebounce = 5 * time.Millisecond
	// DefaultMaxDelay bounds how long a stream of events delays a rebuild;
	// the reconcile loop's own minimum interval (50 ms) spaces the applies.
	DefaultMaxDelay      = 50 * time.Millisecond
	DefaultProbeInterval = 2 * time.Second
	// ReportingController names sllbrd in the Events it writes.
	ReportingController = "sllbrd"
)

// Source watches the objects of one Gateway on an API server.
type Source struct {
	namespace, gateway string
	kube               kubernetes.Interface
	gateways           gatewayclient.Interface
	crds               rest.Interface
	debounce, maxDelay time.Duration
	window             *manifest.Window // maxDelay, widened under bursts (Run's goroutine only)
	probeInterval      time.Duration
	log                *slog.Logger
	translateOpts      []translate.Option
	health             *health
	// gate holds the informers' lists and watches back while the server
	// does not answer (kube/apigate).
	gate *apigate.Gate

	readyMu  sync.Mutex
	wasReady bool // readiness last logged
}

// Option configures a Source.
type Option func(*Source)

// WithDebounce sets how long the objects must stay unchanged before a
// rebuild (quiet, default 5ms) and the longest a burst can delay one
// (max, default 50ms; it doubles while a burst goes on, up to
// manifest.MaxDelayCap, and returns once changes go quiet).
func WithDebounce(quiet, max time.Duration) Option {
	return func(s *Source) { s.debounce, s.maxDelay = quiet, max }
}

// WithProbeInterval sets how often the API server's /readyz is read to
// decide readiness (default 2s); a list or watch failure, or a watch
// stream ending, triggers a read at once.
func WithProbeInterval(d time.Duration) Option {
	return func(s *Source) { s.probeInterval = d }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(s *Source) { s.log = l }
}

// WithTranslateOptions passes options to every translation (e.g.
// translate.WithCopyRange); the Problems they find become Events too.
func WithTranslateOptions(opts ...translate.Option) Option {
	return func(s *Source) { s.translateOpts = append(s.translateOpts, opts...) }
}

// NewSource returns a source for the Gateway gatewayName in namespace,
// reached with cfg. It does not contact the server; Run does.
func NewSource(cfg *rest.Config, namespace, gatewayName string, opts ...Option) (*Source, error) {
	if namespace == "" || gatewayName == "" {
		return nil, fmt.Errorf("apiserver: namespace %q and gateway %q must both be set", namespace, gatewayName)
	}
	s := &Source{
		namespace:     namespace,
		gateway:       gatewayName,
		debounce:      DefaultDebounce,
		maxDelay:      DefaultMaxDelay,
		probeInterval: DefaultProbeInterval,
		log:           slog.Default(),
		health:        newHealth(),
	}
	for _, o := range opts {
		o(s)
	}
	var err error
	if s.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("apiserver: kubernetes client: %w", err)
	}
	s.gate = apigate.New(apigate.Readyz(s.kube.Discovery()), apigate.DefaultPeriod)
	if s.gateways, err = gatewayclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("apiserver: gateway-api client: %w", err)
	}
	if s.crds, err = newCRDClient(cfg); err != nil {
		return nil, fmt.Errorf("apiserver: %s client: %w", groupVersion, err)
	}
	return s, nil
}

// Ready reports whether the source has synced, the API server answers and
// the watches have resumed after any interruption (see the package
// documentation); when not, the reason says why.
func (s *Source) Ready() (bool, string) { return s.health.ready() }

// Synced reports whether the first state was published: from then on the
// source always has a last state, whatever the API server does.
func (s *Source) Synced() bool { return s.health.isSynced() }

// Run watches until ctx is done and calls emit (from Run's goroutine) with
// the first translation after the first full sync and then for every change
// of state, problems or error. It returns nil when ctx is done, or an error
// if the Events recorder cannot start.
func (s *Source) Run(ctx context.Context, emit func(manifest.Update)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the informers, the prober and the resumer end
	defer cancel()
	changed := make(chan struct{}, 1)
	w := s.newWatchers(changed)
	reporter, stopEvents, err := s.startEvents(ctx)
	if err != nil {
		return err
	}
	defer stopEvents()
	w.start(ctx, &wg)
	secrets := s.newSecretWatch(changed)
	defer secrets.stop()
	wg.Go(func() { s.probe(ctx) })
	wg.Go(func() { s.resume(ctx, w, changed) })
	if !cache.WaitForCacheSync(ctx.Done(), w.hasSynced()...) {
		return nil
	}
	s.log.Info("API server source synced", "namespace", s.namespace, "gateway", s.gateway)
	var pub manifest.Publisher
	for {
		_, caughtUp := s.health.epochs() // what the caches reflect at least
		observed := w.takeObserved()
		snap, err := w.snapshot(s.namespace, s.gateway)
		var u manifest.Update
		var emitNow bool
		if err != nil {
			u, emitNow = pub.Apply(nil, nil, err)
		} else {
			snap.Secrets = secrets.follow(ctx, snap.Routers)
			state, problems, terr := translate.Translate(snap, s.translateOpts...)
			u, emitNow = pub.Apply(state, problems, terr)
			reporter.report(snap, problems)
		}
		if emitNow {
			u.Observed = observed
			emit(u)
		}
		s.health.published(caughtUp)
		s.logReadiness()
		if !s.waitForBurst(ctx, changed) {
			return nil
		}
	}
}

// waitForBurst waits for a change and then for the burst it starts to end
// (debounce, bounded by maxDelay). It returns false when ctx is done.
func (s *Source) waitForBurst(ctx context.Context, changed <-chan struct{}) bool {
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	}
	if s.window == nil {
		s.window = manifest.NewWindow(s.maxDelay)
	}
	s.window.Begin(time.Now())
	deadline := time.NewTimer(s.window.Max())
	defer deadline.Stop()
	quiet := time.NewTimer(s.debounce)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			s.window.End(time.Now(), true)
			return true
		case <-quiet.C:
			s.window.End(time.Now(), false)
			return true
		case <-changed:
			quiet.Reset(s.debounce)
		}
	}
}

// signal makes a pending notification on a channel of capacity one.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
