package reconcile

import "time"

// spacing decides how long the loop waits before an apply, in the manner of
// kube-proxy's bounded-frequency runner with a widening interval:
//
//   - after a quiet period at least as long as the current interval, an
//     apply runs at once (the leading edge of a change is never delayed)
//     and the interval returns to min;
//   - otherwise the apply waits until the current interval has passed since
//     the previous one (what arrives meanwhile is coalesced), and the
//     interval doubles, up to max.
//
// A single change is applied at once; a burst of changes lasting T costs
// about log2(T/min) applies while T is below max, then one per max; no
// change waits longer than max.
type spacing struct {
	min, max time.Duration
	cur      time.Duration // current interval, min..max
}

// wait returns how long to wait given the time since the previous apply
// began, and updates the interval.
func (s *spacing) wait(sinceLast time.Duration) time.Duration {
	if s.cur < s.min {
		s.cur = s.min
	}
	if sinceLast >= s.cur {
		s.cur = s.min
		return 0
	}
	w := s.cur - sinceLast
	s.cur = min(2*s.cur, max(s.max, s.min))
	return w
}
