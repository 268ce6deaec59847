package apiserver

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// health is the readiness of a Source. It is ready once the first sync was
// published, while the API server answers its /readyz probes, and unless
// an interruption (a failed probe, list or watch, an error in a watch
// stream) has not been made good: after one, it is ready again only once
// every informer has a watch stream open, its cache has caught up with a
// read of the server made after that, and a state built from those caches
// was published. The epoch counts interruptions; caughtUp and resumed are
// the epochs made good so far by the resumer and by a publication.
type health struct {
	mu       sync.Mutex
	synced   bool
	probeErr error // last probe's failure, nil once a probe succeeded
	lastErr  error // last interruption's cause
	epoch    uint64
	caughtUp uint64
	resumed  uint64
	open     map[string]int // watch streams open, by kind

	wake      chan struct{} // something the resumer waits for happened
	probeWake chan struct{} // probe the server now
}

func newHealth() *health {
	return &health{open: map[string]int{}, wake: make(chan struct{}, 1), probeWake: make(chan struct{}, 1)}
}

// register adds a kind whose watch streams are counted.
func (h *health) register(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open[kind] = 0
}

// interrupted records that the view of the server may have a gap.
func (h *health) interrupted(err error) {
	h.mu.Lock()
	h.epoch++
	h.lastErr = err
	h.mu.Unlock()
	signal(h.probeWake)
	signal(h.wake)
}

func (h *health) streamOpened(kind string) {
	h.mu.Lock()
	h.open[kind]++
	h.mu.Unlock()
	signal(h.wake)
}

func (h *health) streamClosed(kind string) {
	h.mu.Lock()
	h.open[kind]--
	h.mu.Unlock()
	signal(h.probeWake)
}

func (h *health) probed(err error) {
	h.mu.Lock()
	h.probeErr = err
	if err != nil {
		h.epoch++
		h.lastErr = fmt.Errorf("probe: %w", err)
	}
	h.mu.Unlock()
	signal(h.wake)
}

// resumable returns the epoch to make good, if there is one and the server
// answers and every kind in kinds has a watch stream open.
func (h *health) resumable(kinds []string) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.synced || h.probeErr != nil || h.caughtUp == h.epoch {
		return 0, false
	}
	for _, k := range kinds {
		if h.open[k] <= 0 {
			return 0, false
		}
	}
	return h.epoch, true
}

// setCaughtUp records that the caches caught up after epoch e.
func (h *health) setCaughtUp(e uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.caughtUp = e
}

// epochs returns the count of interruptions and the one the caches have
// caught up with (read before a build, to pass to published after it).
func (h *health) epochs() (epoch, caughtUp uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.epoch, h.caughtUp
}

// published records that a state built after the caches caught up with
// epoch e was published (the first one ends the first sync).
func (h *health) published(e uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.synced = true
	if e == h.epoch {
		h.resumed = e
	}
}

func (h *health) isSynced() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.synced
}

func (h *health) ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.synced && h.lastErr != nil:
		return false, "waiting for the first sync with the API server: " + h.lastErr.Error()
	case !h.synced:
		return false, "waiting for the first sync with the API server"
	case h.probeErr != nil:
		return false, "API server unreachable, keeping the last state: " + h.probeErr.Error()
	case h.resumed != h.epoch:
		return false, "API server watches not yet resumed" + h.closedLocked() + " after: " + h.lastErr.Error()
	}
	return true, ""
}

// closedLocked names the kinds without an open watch stream.
func (h *health) closedLocked() string {
	var closed []string
	for k, n := range h.open {
		if n <= 0 {
			closed = append(closed, k)
		}
	}
	if len(closed) == 0 {
		return ""
	}
	sort.Strings(closed)
	return " (no watch of " + strings.Join(closed, ", ") + ")"
}

// probeTimeout bounds one /readyz request.
const probeTimeout = 2 * time.Second

// probe reads the API server's /readyz every probe interval, and at once
// when the health asks (a list, watch or stream failed or ended), until
// ctx is done.
func (s *Source) probe(ctx context.Context) {
	ticker := time.NewTicker(s.probeInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-s.health.probeWake:
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := s.kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(pctx).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.health.probed(err)
		s.logReadiness()
	}
}

// logReadiness logs a change of readiness.
func (s *Source) logReadiness() {
	is, why := s.health.ready()
	s.readyMu.Lock()
	defer s.readyMu.Unlock()
	if is != s.wasReady {
		s.wasReady = is
		s.log.Info("API server source readiness changed", "ready", is, "reason", why)
	}
}
