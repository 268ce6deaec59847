package liveness

import (
	"container/heap"
	"time"
)

// maxGroup bounds the probes sent in one burst. Addresses with the same
// interval are probed in groups that share one instant of it (see place):
// a few addresses cost one wake-up per interval rather than one each (on
// a node the wake-ups, not the packets, were most of the prober's CPU at
// rest), while 1,000 addresses go out as bursts of at most maxGroup at
// phases spread over the interval.
const maxGroup = 32

// groupKey names the addresses probed together: the same interval, and the
// same phase in it (their probes are due at epoch + phase + k·interval).
type groupKey struct{ interval, phase time.Duration }

// goldenFrac is the fractional part of the golden ratio: phases
// frac(k·goldenFrac) are spread evenly over the interval for any number k
// of groups started, so groups started together do not probe together.
const goldenFrac = 0.6180339887498949

// schedule is a min-heap of endpoints by the time of their next probe.
type schedule []*endpoint

func (s schedule) Len() int           { return len(s) }
func (s schedule) Less(i, j int) bool { return s[i].next.Before(s[j].next) }
func (s schedule) Swap(i, j int) {
	s[i], s[j] = s[j], s[i]
	s[i].heapIdx, s[j].heapIdx = i, j
}
func (s *schedule) Push(x any) {
	e := x.(*endpoint)
	e.heapIdx = len(*s)
	*s = append(*s, e)
}
func (s *schedule) Pop() any {
	old := *s
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*s = old[:len(old)-1]
	e.heapIdx = -1
	return e
}

func (s *schedule) add(e *endpoint)    { heap.Push(s, e) }
func (s *schedule) remove(e *endpoint) { heap.Remove(s, e.heapIdx) }
func (s *schedule) fix(e *endpoint)    { heap.Fix(s, e.heapIdx) }

// first returns the endpoint probed next, or nil.
func (s schedule) first() *endpoint {
	if len(s) == 0 {
		return nil
	}
	return s[0]
}

// place puts e, whose cfg is set, in a group of its interval and schedules
// its next probe at the group's first instant not before from: the fullest
// group that has room (ties: the earliest phase), so that addresses share
// wake-ups; else a new group at the next phase of a low-discrepancy
// sequence, so that groups are spread over the interval.
func (p *Prober) place(e *endpoint, from time.Time) {
	iv := e.cfg.Interval
	k, n := groupKey{}, -1
	for g, gn := range p.groups {
		if g.interval == iv && gn < p.groupMax && (gn > n || gn == n && g.phase < k.phase) {
			k, n = g, gn
		}
	}
	if n < 0 {
		k = p.newGroup(iv, from)
	}
	p.groups[k]++
	e.grp = k
	e.next = p.due(k, from)
}

// leave takes e out of its group.
func (p *Prober) leave(e *endpoint) {
	if p.groups[e.grp]--; p.groups[e.grp] <= 0 {
		delete(p.groups, e.grp)
	}
}

// newGroup returns a group of interval iv not yet used, whose first
// instant after from is the next phase of the sequence.
func (p *Prober) newGroup(iv time.Duration, from time.Time) groupKey {
	var k groupKey
	for range 64 { // a used phase (same nanosecond) is all but impossible
		p.phaseFrac += goldenFrac
		if p.phaseFrac >= 1 {
			p.phaseFrac--
		}
		at := from.Sub(p.epoch) + time.Duration(p.phaseFrac*float64(iv))
		if k = (groupKey{iv, at % iv}); p.groups[k] == 0 {
			break
		}
	}
	return k
}

// due returns the first instant of group k not before from.
func (p *Prober) due(k groupKey, from time.Time) time.Time {
	since := from.Sub(p.epoch) - k.phase
	n := since / k.interval
	if since > n*k.interval { // ceiling (since may be negative)
		n++
	}
	return p.epoch.Add(k.phase + n*k.interval)
}

// advance moves e's next probe one interval on from its scheduled time. If
// the prober has fallen more than an interval behind, the next probe is
// the group's first instant at least an interval from now: a stall is not
// made up for with a burst, and the group stays together.
func (p *Prober) advance(e *endpoint, now time.Time) {
	e.next = e.next.Add(e.cfg.Interval)
	if !e.next.After(now) {
		e.next = p.due(e.grp, now.Add(e.cfg.Interval))
	}
}
