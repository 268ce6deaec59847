package targetnet

import (
	"context"
	"sync"
	"time"
)

// Outcome is the result of applying one generation.
type Outcome struct {
	Generation int64
	Result     Result
	Err        error
	Took       time.Duration
	// Changed is when the generation applied was handed to Set: the time
	// from a change to the kernel holding it is Took's end minus Changed.
	Changed time.Time
}

// Configurer makes a namespace hold a Desired configuration, as
// Applier.Apply does: an *Applier over one kernel, or one that opens the
// namespace for each apply (the node daemon, kube/targetnode).
type Configurer interface {
	Apply(d Desired) (Result, error)
}

var _ Configurer = (*Applier)(nil)

// Loop applies the latest desired configuration: it coalesces changes
// (only the latest is applied), retries a failed apply with exponential
// backoff, and re-applies a successful one every resync period to repair
// what someone else changed. Apply runs on the Run goroutine only.
type Loop struct {
	applier Configurer
	report  func(Outcome)
	resync  time.Duration
	backoff [2]time.Duration
	kick    chan struct{}

	mu      sync.Mutex
	gen     int64
	desired Desired
	changed time.Time
	set     bool
	pending bool
}

// LoopOption configures a Loop.
type LoopOption func(*Loop)

// WithResync sets how often a healthy configuration is re-applied (default
// 30 s).
func WithResync(d time.Duration) LoopOption { return func(l *Loop) { l.resync = d } }

// WithBackoff sets the retry delays after a failure (default 100 ms doubling
// to 10 s).
func WithBackoff(min, max time.Duration) LoopOption {
	return func(l *Loop) { l.backoff = [2]time.Duration{min, max} }
}

// NewLoop returns a loop applying with a and calling report after every
// apply (from the Run goroutine).
func NewLoop(a Configurer, report func(Outcome), opts ...LoopOption) *Loop {
	l := &Loop{applier: a, report: report, resync: 30 * time.Second,
		backoff: [2]time.Duration{100 * time.Millisecond, 10 * time.Second}, kick: make(chan struct{}, 1)}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Set hands over generation gen of the desired configuration; Run applies
// it soon. Nothing is applied before the first Set.
func (l *Loop) Set(gen int64, d Desired) {
	l.mu.Lock()
	if !l.pending {
		l.changed = time.Now()
	}
	l.gen, l.desired, l.set, l.pending = gen, d, true, true
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Clear withdraws the desired configuration: nothing is applied (nor
// re-applied at resync) until the next Set, and what was applied stays. An
// apply already running finishes and is reported.
func (l *Loop) Clear() {
	l.mu.Lock()
	l.set, l.pending = false, false
	l.mu.Unlock()
}

// Run applies until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-l.kick:
		case <-timer.C:
		}
		l.mu.Lock()
		gen, d, changed, set := l.gen, l.desired, l.changed, l.set
		l.pending = false
		l.mu.Unlock()
		if !set {
			continue
		}
		start := time.Now()
		res, err := l.applier.Apply(d)
		l.report(Outcome{Generation: gen, Result: res, Err: err, Took: time.Since(start), Changed: changed})
		next := l.resync
		if err != nil {
			failures++
			next = min(l.backoff[0]<<min(failures-1, 20), l.backoff[1])
		} else {
			failures = 0
		}
		if next > 0 {
			timer.Reset(next)
		}
	}
}
