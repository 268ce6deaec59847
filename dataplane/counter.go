package dataplane

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Counter counts packets and bytes. The hot path adds to it with atomics;
// readers load it at any time.
type Counter struct {
	packets atomic.Uint64
	bytes   atomic.Uint64
	_       [48]byte // keep counters on their own cache lines
}

// Add counts one packet of n bytes.
func (c *Counter) Add(n int) {
	c.packets.Add(1)
	c.bytes.Add(uint64(n))
}

// Packets returns the packets counted so far.
func (c *Counter) Packets() uint64 { return c.packets.Load() }

// Bytes returns the bytes counted so far.
func (c *Counter) Bytes() uint64 { return c.bytes.Load() }

// counterSet hands out one Counter per label set and keeps it across
// configuration changes, so totals survive a reload; ids are small, stable
// integers that fit the fragment table's value. Counters of objects that are
// gone stay (their totals are final) up to maxCounters.
type counterSet struct {
	mu     sync.Mutex
	ids    map[string]uint16
	labels [][]string
	all    atomic.Pointer[[]*Counter] // id -> counter, copied on growth
	// overflow counts for label sets beyond maxCounters.
	overflow Counter
}

const (
	maxCounters = 1<<16 - 1
	overflowID  = maxCounters
)

func newCounterSet() *counterSet {
	s := &counterSet{ids: make(map[string]uint16)}
	empty := []*Counter{}
	s.all.Store(&empty)
	return s
}

// get returns the id and counter for the labels, creating them on first use.
// When the set is full it returns the shared overflow counter and ok=false.
func (s *counterSet) get(labels ...string) (id uint16, c *Counter, ok bool) {
	name := strings.Join(labels, "\x00")
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, found := s.ids[name]; found {
		return id, (*s.all.Load())[id], true
	}
	cur := *s.all.Load()
	if len(cur) >= maxCounters {
		return overflowID, &s.overflow, false
	}
	next := append(cur[:len(cur):len(cur)], &Counter{})
	id = uint16(len(cur))
	s.ids[name] = id
	s.labels = append(s.labels, labels)
	s.all.Store(&next)
	return id, next[id], true
}

// byID returns the counter with id (the overflow counter for unknown ids).
func (s *counterSet) byID(id uint16) *Counter {
	all := *s.all.Load()
	if int(id) < len(all) {
		return all[id]
	}
	return &s.overflow
}

// each calls f for every counter, in creation order.
func (s *counterSet) each(f func(labels []string, c *Counter)) {
	s.mu.Lock()
	labels := append([][]string(nil), s.labels...)
	s.mu.Unlock()
	all := *s.all.Load()
	for i, l := range labels {
		f(l, all[i])
	}
}
