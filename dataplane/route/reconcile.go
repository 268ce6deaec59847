package route

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// Reconciler makes the kernel's policy routing in our ranges match the
// desired set. It is not safe for concurrent use.
type Reconciler struct {
	kernel Kernel
	ranges Ranges
	// known is our part of the kernel's rules and routes as last listed,
	// updated by our successful changes since; nil when it must be listed
	// again (see observe).
	known *observed
	// maxListingAge: a listing older than this is not used.
	maxListingAge time.Duration
}

// DefaultMaxListingAge is how long a listing of the kernel's rules and
// routes is used, with the Reconciler's own changes applied to it, when
// no change elsewhere is reported: shorter than the daemon's 30 s resync,
// so every resync compares with the kernel itself, as it did before
// listings were kept, and a difference the notifications could not show
// lasts at most one resync.
const DefaultMaxListingAge = 20 * time.Second

// Option configures New.
type Option func(*Reconciler)

// WithMaxListingAge replaces DefaultMaxListingAge; 0 lists the kernel at
// every Add and Prune.
func WithMaxListingAge(d time.Duration) Option { return func(rc *Reconciler) { rc.maxListingAge = d } }

// WithRanges replaces DefaultRanges.
func WithRanges(r Ranges) Option { return func(rc *Reconciler) { rc.ranges = r } }

// New returns a Reconciler over k; it does not touch the kernel.
func New(k Kernel, opts ...Option) (*Reconciler, error) {
	rc := &Reconciler{kernel: k, ranges: DefaultRanges, maxListingAge: DefaultMaxListingAge}
	for _, o := range opts {
		o(rc)
	}
	if err := rc.ranges.validate(); err != nil {
		return nil, err
	}
	return rc, nil
}

// Ranges returns the ranges in use.
func (rc *Reconciler) Ranges() Ranges { return rc.ranges }

// ErrNoCatchAll is wrapped by Add's error when the catch-all blackhole
// rules could not be confirmed in place: until they are, a mark without a
// table would be routed by the main table, so nothing must be newly queued.
var ErrNoCatchAll = errors.New("catch-all blackhole rule for the mark block not in place")

// Add is the first phase: it installs the catch-all blackhole rules and
// the skip rules, then creates or replaces the routes and adds the rules
// of endpoints and paths. It deletes nothing, so objects of a previous Add
// that are not given again stay until Prune. Invalid or conflicting
// objects are skipped and reported; the rest is applied.
func (rc *Reconciler) Add(endpoints []EndpointRoute, paths []ReturnPath) error {
	want, errs := rc.desired(endpoints, paths)
	have, err := rc.observe()
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("%w: %w", ErrNoCatchAll, err))...)
	}
	for _, r := range want.catchAll {
		if !have.rules[r] {
			if err := rc.addRule(r); err != nil {
				errs = append(errs, fmt.Errorf("%w: add %s: %w", ErrNoCatchAll, r, err))
			}
		}
	}
	for _, r := range want.skip { // not needed for correctness: no ErrNoCatchAll
		if !have.rules[r] {
			if err := rc.addRule(r); err != nil {
				errs = append(errs, fmt.Errorf("add %s: %w", r, err))
			}
		}
	}
	for _, r := range want.routes {
		old, exists := have.routes[r.Key()]
		if exists && old.Equal(r) {
			continue
		}
		if err := rc.replaceRoute(r); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r, err))
			continue
		}
		if _, endpointTable := want.endpointTables[r.Table]; exists && endpointTable {
			errs = append(errs, rc.flushNeighbours(old, r)...)
		}
	}
	for _, r := range want.rules {
		if !have.rules[r] {
			if err := rc.addRule(r); err != nil {
				errs = append(errs, fmt.Errorf("add %s: %w", r, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Prune is the second phase: it deletes our rules and routes that endpoints
// and paths (the same as given to Add) do not want, rules before routes.
// The catch-all and the skip rules stay. Only deletion failures are
// reported (Add reported the invalid objects).
func (rc *Reconciler) Prune(endpoints []EndpointRoute, paths []ReturnPath) error {
	want, _ := rc.desired(endpoints, paths)
	keepRules := make(map[Rule]bool, len(want.catchAll)+len(want.skip)+len(want.rules))
	for _, r := range slices.Concat(want.catchAll, want.skip, want.rules) {
		keepRules[r] = true
	}
	keepRoutes := make(map[tableroute.Key]bool, len(want.routes))
	for _, r := range want.routes {
		keepRoutes[r.Key()] = true
	}
	return rc.remove(func(r Rule) bool { return keepRules[r] }, func(r Route) bool { return keepRoutes[r.Key()] })
}

// Cleanup deletes every rule and route of ours: rules (the skip rules
// among them), then routes, then the catch-all last, so a marked packet is
// dropped until the very end.
func (rc *Reconciler) Cleanup() error {
	catchAll := func(r Rule) bool { return r.Blackhole && r.Priority == rc.ranges.Priorities.Min+catchAllRuleOffset }
	if err := rc.remove(catchAll, func(Route) bool { return false }); err != nil {
		return err
	}
	return rc.remove(func(Rule) bool { return false }, func(Route) bool { return false })
}

// remove deletes our rules, then our routes, that keep does not want.
func (rc *Reconciler) remove(keepRule func(Rule) bool, keepRoute func(Route) bool) error {
	have, err := rc.observe()
	if err != nil {
		return err
	}
	var errs []error
	for r := range have.rules {
		if !keepRule(r) {
			if err := rc.deleteRule(r); err != nil {
				errs = append(errs, fmt.Errorf("delete stale %s: %w", r, err))
			}
		}
	}
	for _, r := range have.routes {
		if !keepRoute(r) {
			if err := rc.deleteRoute(r); err != nil {
				errs = append(errs, fmt.Errorf("delete stale %s: %w", r, err))
			}
		}
	}
	return errors.Join(errs...)
}

// flushNeighbours deletes the neighbour entries of old's gateways that new
// no longer uses.
func (rc *Reconciler) flushNeighbours(old, new Route) []error {
	var errs []error
	for _, h := range old.Hops {
		gone := true
		for _, n := range new.Hops {
			gone = gone && n != h
		}
		if gone {
			if err := rc.kernel.DeleteNeighbour(h.IfIndex, h.Gateway); err != nil {
				errs = append(errs, fmt.Errorf("flush neighbour %s ifindex %d of table %d: %w", h.Gateway, h.IfIndex, old.Table, err))
			}
		}
	}
	return errs
}

// Gateways returns the hops of the gateway route (GatewayMetric, not a
// blackhole) the kernel holds in table, one of ours, per family: what a
// previous run left as the return path. It changes nothing; the listing it
// makes serves the next Add.
func (rc *Reconciler) Gateways(table uint32) ([]tableroute.Hop, error) {
	have, err := rc.observe()
	if err != nil {
		return nil, err
	}
	var hops []tableroute.Hop
	for _, r := range have.routes {
		if r.Table == table && r.Metric == GatewayMetric && !r.Blackhole {
			hops = append(hops, r.Hops...)
		}
	}
	return hops, nil
}
