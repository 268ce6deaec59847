package dataplane

import (
	"strconv"
	"time"
)

// ReasonCount returns the packets and bytes decided for reason r, summed
// over the counter shards.
func (e *Engine) ReasonCount(r Reason) (packets, bytes uint64) {
	if r >= numReasons {
		return 0, 0
	}
	var sum Count
	for i := range e.shards {
		e.shards[i].reasons[r].addTo(&sum)
	}
	return sum.Packets, sum.Bytes
}

// EachDecodeError calls f with every decode error and how many packets it
// made undecodable.
func (e *Engine) EachDecodeError(f func(err error, packets uint64)) {
	for i, err := range e.decodeErrors {
		var sum Count
		for s := range e.shards {
			e.shards[s].decodeErrors[i].addTo(&sum)
		}
		f(err, sum.Packets)
	}
}

// EachRoute calls f with the counters of every route of the committed
// configuration, and of routes removed less than the counter grace ago
// (the grace period of marks: later fragments may still count on them);
// then they are deleted.
func (e *Engine) EachRoute(f func(route, service string, c Count)) {
	e.routeCounters.each(time.Now(), func(l []string, c Count) { f(l[0], l[1], c) })
}

// EachEndpoint calls f with the counters of every endpoint address of the
// committed configuration, and of those removed less than the counter
// grace ago, as EachRoute.
func (e *Engine) EachEndpoint(f func(service string, id int, addr string, c Count)) {
	e.endpointCounters.each(time.Now(), func(l []string, c Count) {
		id, _ := strconv.Atoi(l[1])
		f(l[0], id, l[2], c)
	})
}
