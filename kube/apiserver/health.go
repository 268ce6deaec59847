package apiserver

import (
	"context"
	"sync"
	"time"
)

// health is the readiness of a Source: synced once, then following the
// API server's answers to /readyz probes.
type health struct {
	mu       sync.Mutex
	synced   bool
	probeErr error // last probe's failure, nil once a probe succeeded
	watchErr error // last list/watch failure
}

func (h *health) setSynced() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.synced = true
}

func (h *health) watchFailed(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watchErr = err
}

func (h *health) probed(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.probeErr = err
}

func (h *health) ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.synced && h.watchErr != nil:
		return false, "waiting for the first sync with the API server: " + h.watchErr.Error()
	case !h.synced:
		return false, "waiting for the first sync with the API server"
	case h.probeErr != nil:
		return false, "API server unreachable, keeping the last state: " + h.probeErr.Error()
	}
	return true, ""
}

// probeTimeout bounds one /readyz request.
const probeTimeout = 2 * time.Second

// probe reads the API server's /readyz every probe interval, and at once
// when now is signalled, until ctx is done.
func (s *Source) probe(ctx context.Context, now <-chan struct{}) {
	ticker := time.NewTicker(s.probeInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-now:
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := s.kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(pctx).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		was, _ := s.health.ready()
		s.health.probed(err)
		if is, why := s.health.ready(); is != was {
			s.log.Info("API server source readiness changed", "ready", is, "reason", why)
		}
	}
}
