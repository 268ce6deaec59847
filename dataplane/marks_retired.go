package dataplane

import (
	"cmp"
	"slices"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/route"
)

// VerdictMargin is added to the fragment lifetime to make the grace period
// of a removed endpoint's routes: it covers packets decided on the previous
// snapshot whose verdicts are still being written (one nfqueue batch) or
// that are still on their way through the kernel.
const VerdictMargin = time.Second

// routeSlot names one endpoint route: a mark in one address family.
type routeSlot struct {
	mark uint32
	ipv6 bool
}

func slotOf(r route.EndpointRoute) routeSlot {
	return routeSlot{mark: r.Mark, ipv6: !r.Via.Unmap().Is4()}
}

// retiredRoute is an endpoint route gone from the configuration, kept
// programmed until until. A zero until means the plan it left has not been
// committed yet: its grace period has not started.
type retiredRoute struct {
	route route.EndpointRoute
	until time.Time
}

// retiredRoutes keeps the endpoint routes of the committed plan and those
// that left it, so that a mark packets may still carry keeps its route for
// a grace period after the snapshot without it is committed.
type retiredRoutes struct {
	grace   time.Duration
	live    map[routeSlot]route.EndpointRoute // routes of the plan being committed
	retired map[routeSlot]retiredRoute
}

func newRetiredRoutes(grace time.Duration) retiredRoutes {
	return retiredRoutes{grace: grace, live: map[routeSlot]route.EndpointRoute{}, retired: map[routeSlot]retiredRoute{}}
}

// program takes the endpoint routes of the plan about to be committed and
// returns the routes to program: those, plus the retired ones still in
// their grace period at now. Routes of the previous plan that current lacks
// retire (their grace starts at committed); a retired route whose slot is
// in current again is current; a retired route whose grace ended is
// dropped, for the next Prune to delete.
func (r *retiredRoutes) program(current []route.EndpointRoute, now time.Time) []route.EndpointRoute {
	next := make(map[routeSlot]route.EndpointRoute, len(current))
	for _, e := range current {
		next[slotOf(e)] = e
	}
	for s, e := range r.live {
		if _, kept := next[s]; !kept {
			r.retired[s] = retiredRoute{route: e}
		}
	}
	for s, old := range r.retired {
		_, back := next[s]
		if back || (!old.until.IsZero() && !now.Before(old.until)) {
			delete(r.retired, s)
		}
	}
	r.live = next
	out := slices.Clone(current)
	for _, s := range r.sortedRetired() {
		out = append(out, r.retired[s].route)
	}
	return out
}

// committed starts, at now, the grace period of the routes retired by the
// plan just committed.
func (r *retiredRoutes) committed(now time.Time) {
	for s, old := range r.retired {
		if old.until.IsZero() {
			old.until = now.Add(r.grace)
			r.retired[s] = old
		}
	}
}

// holds reports whether mark still has a route in its grace period.
func (r *retiredRoutes) holds(mark uint32) bool {
	for s := range r.retired {
		if s.mark == mark {
			return true
		}
	}
	return false
}

// next returns when the earliest grace period ends (zero: none pending).
func (r *retiredRoutes) next() time.Time {
	var first time.Time
	for _, old := range r.retired {
		if first.IsZero() || old.until.Before(first) {
			first = old.until
		}
	}
	return first
}

func (r *retiredRoutes) sortedRetired() []routeSlot {
	out := make([]routeSlot, 0, len(r.retired))
	for s := range r.retired {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b routeSlot) int {
		if c := cmp.Compare(a.mark, b.mark); c != 0 {
			return c
		}
		if a.ipv6 == b.ipv6 {
			return 0
		}
		if a.ipv6 {
			return 1
		}
		return -1
	})
	return out
}
