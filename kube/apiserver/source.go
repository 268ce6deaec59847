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

	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/kube/translate"
)

// Defaults of the Source options.
const (
	DefaultDebounce      = 100 * time.Millisecond
	DefaultMaxDelay      = time.Second
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
	probeInterval      time.Duration
	log                *slog.Logger
	health             health
}

// Option configures a Source.
type Option func(*Source)

// WithDebounce sets how long the objects must stay unchanged before a
// rebuild (quiet, default 100ms) and the longest a burst can delay one
// (max, default 1s).
func WithDebounce(quiet, max time.Duration) Option {
	return func(s *Source) { s.debounce, s.maxDelay = quiet, max }
}

// WithProbeInterval sets how often the API server's /readyz is read to
// decide readiness (default 2s); a watch failure triggers a read at once.
func WithProbeInterval(d time.Duration) Option {
	return func(s *Source) { s.probeInterval = d }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(s *Source) { s.log = l }
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
	}
	for _, o := range opts {
		o(s)
	}
	var err error
	if s.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("apiserver: kubernetes client: %w", err)
	}
	if s.gateways, err = gatewayclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("apiserver: gateway-api client: %w", err)
	}
	if s.crds, err = newCRDClient(cfg); err != nil {
		return nil, fmt.Errorf("apiserver: %s client: %w", groupVersion, err)
	}
	return s, nil
}

// Ready reports whether the source has synced and the API server answers;
// when not, the reason says why.
func (s *Source) Ready() (bool, string) { return s.health.ready() }

// Run watches until ctx is done and calls emit (from Run's goroutine) with
// the first translation after the first full sync and then for every change
// of state, problems or error. It returns nil when ctx is done, or an error
// if the Events recorder cannot start.
func (s *Source) Run(ctx context.Context, emit func(manifest.Update)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the informers and the prober end
	defer cancel()
	changed := make(chan struct{}, 1)
	probeNow := make(chan struct{}, 1)
	w, err := s.newWatchers(changed, func(err error) {
		s.health.watchFailed(err)
		signal(probeNow)
	})
	if err != nil {
		return err
	}
	reporter, stopEvents, err := s.startEvents(ctx)
	if err != nil {
		return err
	}
	defer stopEvents()
	w.start(ctx, &wg)
	secrets := s.newSecretWatch(changed) // routerfeat: BGP passwords
	defer secrets.stop()
	wg.Go(func() { s.probe(ctx, probeNow) })
	if !cache.WaitForCacheSync(ctx.Done(), w.hasSynced...) {
		return nil
	}
	s.health.setSynced()
	s.log.Info("API server source synced", "namespace", s.namespace, "gateway", s.gateway)
	var pub manifest.Publisher
	for {
		snap, err := w.snapshot(s.namespace, s.gateway)
		var u manifest.Update
		var emitNow bool
		if err != nil {
			u, emitNow = pub.Apply(nil, nil, err)
		} else {
			snap.Secrets = secrets.follow(ctx, snap.Routers)
			state, problems, terr := translate.Translate(snap)
			u, emitNow = pub.Apply(state, problems, terr)
			reporter.report(snap, problems)
		}
		if emitNow {
			emit(u)
		}
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
	deadline := time.NewTimer(s.maxDelay)
	defer deadline.Stop()
	quiet := time.NewTimer(s.debounce)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return true
		case <-quiet.C:
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
