package reconcile

import (
	"slices"
	"time"
)

// spacing decides how long the loop waits before an apply, in the manner of
// kube-proxy's bounded-frequency runner with an interval that widens only
// under bursts:
//
//   - an apply waits until the current interval has passed since the
//     previous one began (what arrives meanwhile is coalesced); after a
//     quiet period at least that long since the previous one ended it runs
//     at once and the interval returns to min, so the leading edge of a
//     change is never delayed. Quiet counts from the end: changes that
//     arrived while an apply ran longer than the interval are no pause, and
//     the interval keeps widening under them;
//   - an apply that took up several changes (a burst: changes kept coming
//     while it waited) doubles the interval, up to max; one that took up a
//     single change (or none: a retry, a resync) halves it, down to min.
//
// Changes that each follow the previous apply are applied after at most min
// from it; a burst lasting T costs about log2(T/min) applies while T is
// below max, then one per max; no change waits longer than max.
type spacing struct {
	min, max time.Duration
	cur      time.Duration // current interval, min..max
}

// wait returns how long to wait given the time since the previous apply
// began and since it ended.
func (s *spacing) wait(sinceBegin, sinceEnd time.Duration) time.Duration {
	s.cur = max(s.cur, s.min)
	if sinceEnd >= s.cur {
		s.cur = s.min
		return 0
	}
	return max(s.cur-sinceBegin, 0)
}

// applied adjusts the interval after an apply that took up changes changes.
func (s *spacing) applied(changes int) {
	if changes > 1 {
		s.cur = min(2*max(s.cur, s.min), max(s.max, s.min))
		return
	}
	s.cur = max(s.cur/2, s.min)
}

// ApplyTimes returns when a Loop configured with opts (only the intervals
// matter) starts its applies for changes arriving at these times, the
// applies taking no time: the spacing rule replayed. It is what a series of
// changes costs; the lab tests bound a burst's applies with it.
func ApplyTimes(changes []time.Time, opts ...Option) []time.Time {
	o := newOptions(opts)
	s := spacing{min: o.minInterval, max: o.maxInterval}
	changes = slices.SortedFunc(slices.Values(changes), time.Time.Compare)
	var applies []time.Time
	var last time.Time // zero: long before any change
	for i := 0; i < len(changes); {
		since := changes[i].Sub(last) // the applies take no time
		begin := changes[i].Add(s.wait(since, since))
		taken := 0
		for ; i < len(changes) && !changes[i].After(begin); i++ {
			taken++
		}
		s.applied(taken)
		applies, last = append(applies, begin), begin
	}
	return applies
}
