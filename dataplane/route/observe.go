package route

import (
	"fmt"
	"slices"
	"time"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// observed is our part of the kernel's rules and routes.
type observed struct {
	rules  map[Rule]bool
	routes map[tableroute.Key]Route
	// exact: the listing held no rule or route of ours twice (for rules:
	// no two the kernel's deletion cannot tell apart, see deletionKey)
	// and no foreign rule at our priorities, so each of our changes acts on
	// exactly the object it names (a deletion selects by fewer attributes
	// than a rule has, and by key for a route), and the listing updated
	// by our changes is the kernel's state.
	exact    bool
	listedAt time.Time
}

// observe returns our rules and routes. Over a ChangeWatcher that reports
// no change elsewhere since the last listing, when that listing was exact
// and is not older than maxListingAge, it returns that listing as updated
// by our successful changes since; otherwise it lists the kernel's. The
// watcher is asked before listing, so a change made by someone else while
// the kernel is listed is reported at the next observe, which then lists
// again: nothing changed by anyone else before an observe is missed by it.
//
// The result shares its maps with rc.known: the changes Add, Prune and
// Cleanup record while they walk it (addRule, deleteRoute...) show in it.
// Deleting the entry being ranged over is allowed in Go, and each step
// reads the entry before changing it.
func (rc *Reconciler) observe() (observed, error) {
	w, watching := rc.kernel.(ChangeWatcher)
	changed := !watching || w.ChangedElsewhere()
	if rc.known != nil && !changed && time.Since(rc.known.listedAt) < rc.maxListingAge {
		return *rc.known, nil
	}
	rc.known = nil
	o, err := rc.list()
	if err != nil {
		return o, err
	}
	if watching && o.exact {
		rc.known = &o
	}
	return o, nil
}

// list lists the kernel's rules and routes that are ours.
func (rc *Reconciler) list() (observed, error) {
	o := observed{rules: map[Rule]bool{}, routes: map[tableroute.Key]Route{}, exact: true, listedAt: time.Now()}
	rules, err := rc.kernel.Rules()
	if err != nil {
		return o, fmt.Errorf("list rules: %w", err)
	}
	selected := map[Rule]bool{}
	for _, r := range rules {
		switch {
		case rc.ours(r):
			o.exact = o.exact && !selected[deletionKey(r)]
			o.rules[r], selected[deletionKey(r)] = true, true
		case rc.ranges.Priorities.Contains(r.Priority) || r.Priority == rc.ranges.skipPriority():
			o.exact = false
		}
	}
	routes, err := rc.kernel.Routes()
	if err != nil {
		return o, fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if rc.ranges.Tables.Contains(r.Table) {
			_, twice := o.routes[r.Key()]
			o.exact = o.exact && !twice
			o.routes[r.Key()] = r
		}
	}
	return o, nil
}

// ours reports whether r is in our ranges: its priority is ours and it
// either looks up one of our tables or is a blackhole rule; or it is a
// skip rule: at the priority just before ours, a fwmark rule (inverted or
// not, no other selector) that goes to one of our priorities.
func (rc *Reconciler) ours(r Rule) bool {
	if r.Priority == rc.ranges.skipPriority() {
		return r.Goto != 0 && rc.ranges.Priorities.Contains(r.Goto) && r.Mark != 0 && !r.Src.IsValid()
	}
	return rc.ranges.Priorities.Contains(r.Priority) && r.Goto == 0 && (r.Blackhole || rc.ranges.Tables.Contains(r.Table))
}

// deletionKey is what the kernel tells rules apart by when it deletes one
// (and when it refuses to add one as existing): not a goto's target nor
// the inversion (measured on 6.18: deleting "not fwmark X goto 10002"
// removes "fwmark X goto 10003" at the same priority).
func deletionKey(r Rule) Rule {
	r.Goto, r.Invert = 0, false
	return r
}

// The kernel calls of Add, Prune and Cleanup: each records its outcome in
// rc.known, which a failure forgets (the kernel may have done part of it).

func (rc *Reconciler) addRule(r Rule) error {
	err := rc.kernel.AddRule(r)
	if rc.keep(err) {
		rc.known.rules[r] = true
	}
	return err
}

func (rc *Reconciler) deleteRule(r Rule) error {
	err := rc.kernel.DeleteRule(r)
	if rc.keep(err) {
		delete(rc.known.rules, r)
	}
	return err
}

func (rc *Reconciler) replaceRoute(r Route) error {
	err := rc.kernel.ReplaceRoute(r)
	if rc.keep(err) {
		r.Hops = slices.Clone(r.Hops)
		rc.known.routes[r.Key()] = r
	}
	return err
}

func (rc *Reconciler) deleteRoute(r Route) error {
	err := rc.kernel.DeleteRoute(r)
	if rc.keep(err) {
		delete(rc.known.routes, r.Key())
	}
	return err
}

// keep reports whether rc.known is kept after a change that returned err:
// it is forgotten on an error.
func (rc *Reconciler) keep(err error) bool {
	if err != nil {
		rc.known = nil
	}
	return rc.known != nil
}
