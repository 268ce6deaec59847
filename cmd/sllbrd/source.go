package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/reconcile"
	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/model"
)

// configSource feeds the reconcile loop from manifests or the API server.
type configSource struct {
	log     *slog.Logger
	loop    *reconcile.Loop
	metrics *metrics.Config
	run     func(ctx context.Context, emit func(manifest.Update)) error
	routers func(ctx context.Context, routers []model.Router)
	ctx     context.Context

	mu       sync.Mutex
	lastGen  uint64
	lastErr  error
	problems map[string]int // by object kind, plus "dataplane"
}

func newConfigSource(cfg *config, log *slog.Logger, loop *reconcile.Loop, m *metrics.Config,
	routers func(context.Context, []model.Router)) (*configSource, error) {
	s := &configSource{log: log, loop: loop, metrics: m, routers: routers, problems: map[string]int{}}
	switch {
	case cfg.manifests != "":
		fs := manifest.NewFileSource(cfg.manifests, cfg.gateway, manifest.WithLogger(log))
		s.run = fs.Run
	default:
		return nil, errors.New("no configuration source: give --manifests (the API-server source is not built in yet)")
	}
	return s, nil
}

// Run follows the source until ctx ends.
func (s *configSource) Run(ctx context.Context) error {
	s.ctx = ctx
	return s.run(ctx, s.emit)
}

func (s *configSource) emit(u manifest.Update) {
	now := time.Now()
	s.mu.Lock()
	s.lastErr = u.Err
	changed := u.State != nil && u.State.Generation != s.lastGen
	if changed {
		s.lastGen = u.State.Generation
	}
	dataplaneProblems := s.problems["dataplane"]
	clear(s.problems)
	s.problems["dataplane"] = dataplaneProblems
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
		s.loop.SetState(u.State, now)
		s.routers(s.ctx, u.State.Routers)
	}
}

// setDataplaneProblems records how many parts of the configuration the
// dataplane left out.
func (s *configSource) setDataplaneProblems(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems["dataplane"] = n
	s.metrics.SetProblems(maps.Clone(s.problems))
}

// Ready reports whether the source's latest content was usable.
func (s *configSource) Ready() (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr != nil {
		return false, fmt.Sprintf("configuration source: %v", s.lastErr)
	}
	return true, ""
}
