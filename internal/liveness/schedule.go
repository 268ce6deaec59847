package liveness

import (
	"container/heap"
	"time"
)

// maxCoalesce is how early a probe may go out to share a wake-up with
// others due soon after (coalesce: a tenth of the address's interval at
// most): with many addresses, wake-ups rather than packets dominate the
// prober's CPU, so probes due within maxCoalesce go out together. Probes
// keep their phase (next = scheduled + Interval), so only single gaps vary.
const maxCoalesce = 5 * time.Millisecond

// coalesce is how early e's probe may go out.
func (e *endpoint) coalesce() time.Duration { return min(maxCoalesce, e.cfg.Interval/10) }

// goldenFrac is the fractional part of the golden ratio: phases
// frac(k·goldenFrac) are spread evenly over the interval for any number k
// of addresses added, so addresses added together do not probe together.
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

// phase returns where in its interval the next added address probes,
// advancing the sequence.
func (p *Prober) phase(interval time.Duration) time.Duration {
	p.phaseFrac += goldenFrac
	if p.phaseFrac >= 1 {
		p.phaseFrac--
	}
	return time.Duration(p.phaseFrac * float64(interval))
}

// advance moves e's next probe one interval on from its scheduled time, or
// from now if the prober has fallen more than an interval behind (a stall
// is not made up for with a burst).
func (e *endpoint) advance(now time.Time) {
	e.next = e.next.Add(e.cfg.Interval)
	if !e.next.After(now) {
		e.next = now.Add(e.cfg.Interval)
	}
}
