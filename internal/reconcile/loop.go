package reconcile

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/model"
)

// Desired is one complete input of an apply.
type Desired struct {
	State    *model.State
	Gateways []route.Nexthop
	// GatewayGone says the configured Gateway no longer exists (deleted,
	// or no longer defined): State is the last one seen and stays
	// programmed, but none of its VIPs may be announced.
	GatewayGone bool
	// Dead holds the endpoint addresses this SLLBR's liveness checks find
	// dead (SetDead); never modified once set: a change replaces the map.
	Dead map[netip.Addr]bool
	// Changed is when the oldest change not yet applied was observed: the
	// apply latency runs from here.
	Changed time.Time
}

// ApplyFunc programs d. It is never called concurrently with itself.
type ApplyFunc func(ctx context.Context, d Desired) error

// Status is the loop's view of progress, for readiness.
type Status struct {
	Configured bool   // a configuration has arrived
	Desired    uint64 // generation of the latest configuration
	Applied    uint64 // generation last applied without error
	Err        error  // error of the last apply, nil if it succeeded
	Attempts   int    // consecutive failures
}

// Ready reports whether the latest configuration is programmed.
func (s Status) Ready() bool { return s.Configured && s.Err == nil && s.Applied == s.Desired }

// Reason says why the loop is not ready ("" when it is).
func (s Status) Reason() string {
	switch {
	case !s.Configured:
		return "no configuration received yet"
	case s.Err != nil:
		return fmt.Sprintf("configuration generation %d not programmed (attempt %d): %v", s.Desired, s.Attempts, s.Err)
	case s.Applied != s.Desired:
		return fmt.Sprintf("configuration generation %d not yet programmed", s.Desired)
	}
	return ""
}

// Loop applies the desired state. Create it with New.
type Loop struct {
	apply ApplyFunc
	opts  options
	kick  chan struct{}

	mu      sync.Mutex
	desired Desired
	pending bool      // desired changed since the last apply started
	changes int       // changes since the last apply started
	rerun   time.Time // earliest re-apply asked for with RunBy (zero: none)
	status  Status
}

type options struct {
	minInterval, maxInterval, resync, minBackoff, maxBackoff time.Duration
}

// Option configures a Loop.
type Option func(*options)

// WithMinInterval sets the least time between two applies (default 50 ms).
func WithMinInterval(d time.Duration) Option { return func(o *options) { o.minInterval = d } }

// WithMaxInterval caps the interval between applies that widens during a
// burst of changes (default 1 s): no change waits longer than this.
func WithMaxInterval(d time.Duration) Option { return func(o *options) { o.maxInterval = d } }

// WithResync sets how often a healthy state is re-applied (default 30 s; 0: never).
func WithResync(d time.Duration) Option { return func(o *options) { o.resync = d } }

// WithBackoff sets the retry delays after failures (default 100 ms doubling to 10 s).
func WithBackoff(min, max time.Duration) Option {
	return func(o *options) { o.minBackoff, o.maxBackoff = min, max }
}

// newOptions returns the defaults with opts applied.
func newOptions(opts []Option) options {
	o := options{minInterval: 50 * time.Millisecond, maxInterval: time.Second, resync: 30 * time.Second, minBackoff: 100 * time.Millisecond, maxBackoff: 10 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// New returns a loop that calls apply.
func New(apply ApplyFunc, opts ...Option) *Loop {
	o := newOptions(opts)
	return &Loop{apply: apply, opts: o, kick: make(chan struct{}, 1)}
}

// SetState sets the configuration, observed at changed.
func (l *Loop) SetState(st *model.State, changed time.Time) {
	l.mu.Lock()
	if !l.pending || l.desired.Changed.IsZero() {
		l.desired.Changed = changed
	}
	l.desired.State = st
	l.status.Configured = true
	l.status.Desired = st.Generation
	l.pending = true
	l.changes++
	l.mu.Unlock()
	l.wake()
}

// SetGateways sets the return path's next hops; an unchanged set is ignored.
func (l *Loop) SetGateways(gws []route.Nexthop) {
	l.update(func() bool {
		if slices.Equal(gws, l.desired.Gateways) {
			return false
		}
		l.desired.Gateways = slices.Clone(gws)
		return true
	})
}

// Gateways returns the return path's next hops as last set, also when they
// were set during the apply in progress: an apply that configured the
// GatewayRouters (whose static gateways are known at once) programs them in
// the same pass. The pass SetGateways asked for then finds nothing to do.
func (l *Loop) Gateways() []route.Nexthop {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.desired.Gateways)
}

// SetGatewayGone records whether the configured Gateway is gone; a change
// is applied like any other.
func (l *Loop) SetGatewayGone(gone bool) {
	l.update(func() bool {
		changed := gone != l.desired.GatewayGone
		l.desired.GatewayGone = gone
		return changed
	})
}

// Resync asks for an apply of the desired state soon, as the periodic
// resync would, spaced like any change: something the desired state does
// not describe (the kernel's interfaces) changed and may have undone part
// of what was applied. It counts as no change. Before the first SetState
// it does nothing.
func (l *Loop) Resync() {
	l.mu.Lock()
	due := l.status.Configured
	l.pending = l.pending || due
	l.mu.Unlock()
	if due {
		l.wake()
	}
}

// update runs set under l.mu; when set reports a change, an apply is due.
func (l *Loop) update(set func() bool) {
	l.mu.Lock()
	if !set() {
		l.mu.Unlock()
		return
	}
	if !l.pending {
		l.desired.Changed = time.Now()
	}
	l.pending = true
	l.changes++
	l.mu.Unlock()
	l.wake()
}

// RunBy asks for another apply of the current desired state at t at the
// latest, e.g. for a step the apply deferred (dataplane routes kept for a
// grace period). Call it from the ApplyFunc: it takes effect when that
// apply returns (called at another time, after the next apply).
func (l *Loop) RunBy(t time.Time) {
	l.mu.Lock()
	if l.rerun.IsZero() || t.Before(l.rerun) {
		l.rerun = t
	}
	l.mu.Unlock()
}

// sooner returns wait, or less when RunBy asked for an earlier apply; it
// consumes the request.
func (l *Loop) sooner(wait time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.rerun.IsZero() {
		wait = min(wait, max(time.Until(l.rerun), 0))
		l.rerun = time.Time{}
	}
	return wait
}

// Status returns the loop's progress.
func (l *Loop) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

func (l *Loop) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Run applies until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var begun, ended time.Time // the previous apply's
	space := spacing{min: l.opts.minInterval, max: l.opts.maxInterval}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.kick:
		case <-timer.C:
			l.mu.Lock()
			l.pending = l.pending || l.status.Configured // retry or resync
			l.mu.Unlock()
		}
		if wait := space.wait(time.Since(begun), time.Since(ended)); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait): // coalesce what arrives meanwhile
			}
		}
		d, changes, ok := l.take()
		if !ok {
			continue
		}
		space.applied(changes)
		begun = time.Now()
		err := l.apply(ctx, d)
		ended = time.Now()
		timer.Reset(l.sooner(l.finish(d, err)))
	}
}

// take returns the desired state to apply, if any is pending, and how many
// changes it takes up.
func (l *Loop) take() (Desired, int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.pending || l.desired.State == nil {
		return Desired{}, 0, false
	}
	l.pending = false
	d, changes := l.desired, l.changes
	l.desired.Changed, l.changes = time.Time{}, 0
	return d, changes, true
}

// finish records an apply's outcome and returns when to run again.
func (l *Loop) finish(d Desired, err error) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status.Err = err
	if err == nil {
		l.status.Applied, l.status.Attempts = d.State.Generation, 0
		if l.opts.resync > 0 {
			return l.opts.resync
		}
		return time.Hour * 24 * 365
	}
	if l.desired.Changed.IsZero() {
		l.desired.Changed = d.Changed // the failed change is still unapplied
	}
	l.status.Attempts++
	backoff := l.opts.minBackoff << min(l.status.Attempts-1, 20)
	return min(backoff, l.opts.maxBackoff)
}
