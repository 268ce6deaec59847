package dataplane

import "strconv"

// ReasonCount returns the packets and bytes decided for reason r.
func (e *Engine) ReasonCount(r Reason) (packets, bytes uint64) {
	if r >= numReasons {
		return 0, 0
	}
	return e.reasons[r].Packets(), e.reasons[r].Bytes()
}

// EachDecodeError calls f with every decode error and how many packets it
// made undecodable.
func (e *Engine) EachDecodeError(f func(err error, packets uint64)) {
	for i := range e.decodeErrors {
		f(e.decodeErrors[i].err, e.decodeErrors[i].counter.Packets())
	}
}

// EachRoute calls f with the counters of every route seen so far (routes that
// were removed keep their final totals).
func (e *Engine) EachRoute(f func(route, service string, c *Counter)) {
	e.routeCounters.each(func(l []string, c *Counter) { f(l[0], l[1], c) })
}

// EachEndpoint calls f with the counters of every endpoint address seen so far.
func (e *Engine) EachEndpoint(f func(service string, id int, addr string, c *Counter)) {
	e.endpointCounters.each(func(l []string, c *Counter) {
		id, _ := strconv.Atoi(l[1])
		f(l[0], id, l[2], c)
	})
}
