package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/reconcile"
	"github.com/sllbrd/sllbrd/kube/apiserver"
	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

// configSource feeds the reconcile loop from manifests or the API server.
type configSource struct {
	log     *slog.Logger
	loop    *reconcile.Loop
	metrics *metrics.Config
	run     func(ctx context.Context, emit func(manifest.Update)) error
	// inSync is whether the API server source follows its server, synced
	// whether it has published its first state (both nil: a file source).
	inSync func() (bool, string)
	synced func() bool
	// onUpdate sees every update (sllbrd show config); nil: none.
	onUpdate func(manifest.Update)
	// onState sees every new state before the loop does (the endpoint
	// liveness checks); nil: none.
	onState func(*model.State)

	mu       sync.Mutex
	lastGen  uint64
	lastErr  error
	problems map[string]int // by object kind, plus "dataplane"
}

func newConfigSource(cfg *config, log *slog.Logger, loop *reconcile.Loop, m *metrics.Config) (*configSource, error) {
	s := &configSource{log: log, loop: loop, metrics: m, problems: map[string]int{}}
	// A byte match beyond the copy range can never match: a problem.
	translateOpts := []translate.Option{translate.WithCopyRange(cfg.copyRange)}
	if cfg.manifests != "" {
		s.run = manifest.NewFileSource(cfg.manifests, cfg.gateway, manifest.WithLogger(log),
			manifest.WithTranslateOptions(translateOpts...)).Run
		return s, nil
	}
	rc, err := restConfig(cfg.kubeconfig)
	if err != nil {
		return nil, err
	}
	ns, err := namespace(cfg.namespace)
	if err != nil {
		return nil, err
	}
	src, err := apiserver.NewSource(rc, ns, cfg.gateway, apiserver.WithLogger(log), apiserver.WithTranslateOptions(translateOpts...))
	if err != nil {
		return nil, fmt.Errorf("api server source: %w", err)
	}
	s.run, s.inSync, s.synced = src.Run, src.Ready, src.Synced
	return s, nil
}

// Run follows the source until ctx ends.
func (s *configSource) Run(ctx context.Context) error {
	return s.run(ctx, s.emit)
}

func (s *configSource) emit(u manifest.Update) {
	seen := u.Observed // the change's first event: the apply latency runs from here
	if seen.IsZero() {
		seen = time.Now()
	}
	if s.onUpdate != nil {
		s.onUpdate(u)
	}
	s.mu.Lock()
	s.lastErr = u.Err
	changed := u.State != nil && u.State.Generation != s.lastGen
	if changed {
		s.lastGen = u.State.Generation
	}
	dataplaneProblems := s.problems["dataplane"]
	clear(s.problems)
	s.problems["dataplane"] = dataplaneProblems
	s.problems["source"] = 0
	if u.Err != nil {
		s.problems["source"] = 1 // the latest content is unusable; the last good state stays
	}
	for _, p := range u.Problems {
		s.problems[p.Kind]++
	}
	s.metrics.SetProblems(maps.Clone(s.problems))
	s.mu.Unlock()
	if u.Err != nil {
		s.log.Error("configuration not usable; keeping the last good one", "err", u.Err)
	}
	for _, p := range u.Problems {
		s.log.Warn("configuration problem", "problem", p.String())
	}
	if changed {
		s.log.Debug("configuration changed", "generation", u.State.Generation)
		if s.onState != nil {
			s.onState(u.State)
		}
		s.loop.SetState(u.State, seen)
	}
	// A missing Gateway keeps the last state programmed but withdraws its
	// VIPs; set after the state, so that a Gateway coming back with a new
	// state is announced with that state, not the old one.
	s.loop.SetGatewayGone(errors.Is(u.Err, translate.ErrNoGateway))
}

// setDataplaneProblems records how many parts of the configuration the
// dataplane left out.
func (s *configSource) setDataplaneProblems(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems["dataplane"] = n
	s.metrics.SetProblems(maps.Clone(s.problems))
}

// Ready reports whether the source's latest content was usable. An API
// server source counts until its first sync only: after it, an API server
// unreachable, or whose watches have not resumed, leaves the last state
// programmed and forwarding (InSync reports it). Readiness decides whether
// the SLLBR is a next hop of the targets; an API outage turned every SLLBR
// not ready at once, and kubelet's report of that, once the API server was
// back, took them all out of the return path.
func (s *configSource) Ready() (bool, string) {
	if s.inSync != nil && !s.synced() {
		if ok, why := s.inSync(); !ok {
			return false, why
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr != nil {
		return false, fmt.Sprintf("configuration source: %v", s.lastErr)
	}
	return true, ""
}

// InSync reports whether the source follows its API server (always with a
// file source), with the reason when not.
func (s *configSource) InSync() (bool, string) {
	if s.inSync == nil {
		return true, ""
	}
	return s.inSync()
}

// restConfig loads kubeconfig, or the in-cluster configuration when empty.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --manifests and no --kubeconfig, and not in a cluster: %w", err)
		}
		return rc, nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return rc, nil
}

// serviceAccountNamespace is where Kubernetes writes the pod's namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// namespace returns the flag, else $POD_NAMESPACE, else the service
// account's namespace.
func namespace(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns, nil
	}
	return "", errors.New("--namespace not given and neither $POD_NAMESPACE nor " + serviceAccountNamespace + " says it")
}
