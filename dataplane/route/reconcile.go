package route

import (
	"errors"
	"fmt"
)

// Reconciler makes the kernel's policy routing in our ranges match the
// desired set. It is not safe for concurrent use.
type Reconciler struct {
	kernel Kernel
	ranges Ranges
}

// Option configures New.
type Option func(*Reconciler)

// WithRanges replaces DefaultRanges.
func WithRanges(r Ranges) Option { return func(rc *Reconciler) { rc.ranges = r } }

// New returns a Reconciler over k; it does not touch the kernel.
func New(k Kernel, opts ...Option) (*Reconciler, error) {
	rc := &Reconciler{kernel: k, ranges: DefaultRanges}
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

// Reconcile makes the kernel match endpoints and paths; see the package
// documentation. Invalid or conflicting objects are skipped and reported;
// the rest is applied.
func (rc *Reconciler) Reconcile(endpoints []EndpointRoute, paths []ReturnPath) error {
	want, errs := rc.desired(endpoints, paths)
	have, err := rc.observe()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	wantRoutes := map[routeKey]Route{}
	for _, r := range want.routes {
		wantRoutes[r.key()] = r
	}
	wantRules := map[Rule]bool{}
	for _, r := range want.rules {
		wantRules[r] = true
	}
	for _, r := range want.routes {
		old, exists := have.routes[r.key()]
		if exists && old.equal(r) {
			continue
		}
		if err := rc.kernel.ReplaceRoute(r); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r, err))
			continue
		}
		if _, endpointTable := want.endpointTables[r.Table]; exists && endpointTable {
			errs = append(errs, rc.flushNeighbours(old, r)...)
		}
	}
	for _, r := range want.rules {
		if !have.rules[r] {
			if err := rc.kernel.AddRule(r); err != nil {
				errs = append(errs, fmt.Errorf("add %s: %w", r, err))
			}
		}
	}
	for r := range have.rules {
		if !wantRules[r] {
			if err := rc.kernel.DeleteRule(r); err != nil {
				errs = append(errs, fmt.Errorf("delete stale %s: %w", r, err))
			}
		}
	}
	for k, r := range have.routes {
		if _, ok := wantRoutes[k]; !ok {
			if err := rc.kernel.DeleteRoute(r); err != nil {
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

type observed struct {
	rules  map[Rule]bool
	routes map[routeKey]Route
}

// observe lists the kernel's rules and routes that are ours.
func (rc *Reconciler) observe() (observed, error) {
	o := observed{rules: map[Rule]bool{}, routes: map[routeKey]Route{}}
	rules, err := rc.kernel.Rules()
	if err != nil {
		return o, fmt.Errorf("list rules: %w", err)
	}
	for _, r := range rules {
		if rc.ranges.Priorities.Contains(r.Priority) && rc.ranges.Tables.Contains(r.Table) {
			o.rules[r] = true
		}
	}
	routes, err := rc.kernel.Routes()
	if err != nil {
		return o, fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if rc.ranges.Tables.Contains(r.Table) {
			sortHops(r.Hops)
			o.routes[r.key()] = r
		}
	}
	return o, nil
}
