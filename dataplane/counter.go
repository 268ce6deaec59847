package dataplane

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Count is a counter's packets and bytes, summed over its shards.
type Count struct {
	Packets, Bytes uint64
}

// cell is one shard's share of a counter. Only the reader owning the shard
// adds to it; scrapes load it at any time.
type cell struct {
	packets, bytes atomic.Uint64
}

func (c *cell) add(n int) {
	c.packets.Add(1)
	c.bytes.Add(uint64(n))
}

func (c *cell) addTo(sum *Count) {
	sum.Packets += c.packets.Load()
	sum.Bytes += c.bytes.Load()
}

func (c *cell) reset() {
	c.packets.Store(0)
	c.bytes.Store(0)
}

// Counters are sharded: every Decision writes one shard (NewDecision hands
// shards out in turn, so the readers of up to maxShards queues never share
// one), and a scrape sums the shards. Readers on different cores thus never
// write the same cache line.
const (
	maxShards = 64
	cacheLine = 64
)

// shardCount is the number of counter shards of an engine: one per CPU the
// process may use (as many as sllbrd starts queue readers by default), up
// to maxShards, rounded up to a power of two so a Decision's shard is found
// with a mask.
func shardCount() int {
	n := 1
	for n < min(runtime.GOMAXPROCS(0), maxShards) {
		n <<= 1
	}
	return n
}

// maxDecodeErrors bounds packet.Errors(); NewEngine checks it.
const maxDecodeErrors = 12

// engineShard is one shard of the engine's fixed counters, padded so that
// neighbouring shards never share a cache line.
type engineShard struct {
	_            [cacheLine]byte
	reasons      [numReasons]cell
	decodeErrors [maxDecodeErrors]cell
	_            [cacheLine]byte
}

// counterSet hands out one counter per label set (route, endpoint) and
// keeps it across configuration changes, so totals survive a reload. Ids
// are small integers that fit the fragment table's value. A label set that
// the committed configuration no longer uses is retired and, after grace
// (longer than a fragment table entry can hold its id), deleted: its
// series disappears and its id may be handed to a new label set.
type counterSet struct {
	grace  time.Duration
	shards []setShard

	mu      sync.Mutex
	ids     map[string]uint16
	entries []counterEntry // by id
	free    []uint16       // ids of deleted entries, for reuse
}

type counterEntry struct {
	labels    []string // nil: free
	key       string
	retiredAt time.Time // zero: in use (committed, or built since)
}

// Ids are split into chunks of cells allocated once per shard and never
// moved, so the hot path reads a cell with two loads and no lock, and a
// growing set never copies cells that readers are adding to.
const (
	chunkBits  = 8
	chunkSize  = 1 << chunkBits
	numChunks  = 1 << (16 - chunkBits)
	maxIDs     = 1<<16 - 1 // ids 0..maxIDs-1; overflowID counts the rest
	overflowID = maxIDs
)

type chunk [chunkSize]cell

// setShard is one shard's cells of a counterSet, by id.
type setShard struct {
	chunks [numChunks]atomic.Pointer[chunk]
}

func newCounterSet(shards int, grace time.Duration) *counterSet {
	return &counterSet{grace: grace, shards: make([]setShard, shards), ids: make(map[string]uint16)}
}

func (s *counterSet) allocChunk(c int) {
	for i := range s.shards {
		if s.shards[i].chunks[c].Load() == nil {
			s.shards[i].chunks[c].Store(new(chunk))
		}
	}
}

// add counts one packet of n bytes for id in shard. It allocates nothing
// and takes no lock. overflowID's cell is never exported (nor allocated
// before the last chunk is).
func (s *counterSet) add(shard int, id uint16, n int) {
	if c := s.shards[shard].chunks[id>>chunkBits].Load(); c != nil {
		c[id&(chunkSize-1)].add(n)
	}
}

// sum adds up id's cells over the shards.
func (s *counterSet) sum(id uint16) Count {
	var sum Count
	for i := range s.shards {
		if c := s.shards[i].chunks[id>>chunkBits].Load(); c != nil {
			c[id&(chunkSize-1)].addTo(&sum)
		}
	}
	return sum
}

// get returns the id for the labels, creating the counter on first use or
// after it was deleted; a retired counter is in use again. When every id
// is taken it returns overflowID (counted, never exported).
func (s *counterSet) get(labels ...string) uint16 {
	key := strings.Join(labels, "\x00")
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, found := s.ids[key]; found {
		s.entries[id].retiredAt = time.Time{}
		return id
	}
	var id uint16
	switch {
	case len(s.free) > 0:
		id, s.free = s.free[len(s.free)-1], s.free[:len(s.free)-1]
	case len(s.entries) < maxIDs:
		id = uint16(len(s.entries))
		s.entries = append(s.entries, counterEntry{})
		s.allocChunk(int(id >> chunkBits))
	default:
		return overflowID
	}
	for i := range s.shards {
		s.shards[i].chunks[id>>chunkBits].Load()[id&(chunkSize-1)].reset()
	}
	s.entries[id] = counterEntry{labels: labels, key: key}
	s.ids[key] = id
	return id
}

// commit retires every counter that used (the ids of the configuration
// just committed) does not name, and deletes those retired for longer than
// grace.
func (s *counterSet) commit(used []uint16, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inUse := make([]bool, len(s.entries))
	for _, id := range used {
		if int(id) < len(inUse) {
			inUse[id] = true
		}
	}
	for id := range s.entries {
		e := &s.entries[id]
		if e.labels != nil && !inUse[id] && e.retiredAt.IsZero() {
			e.retiredAt = now
		}
	}
	s.sweepLocked(now)
}

// sweepLocked deletes the counters retired for longer than grace.
func (s *counterSet) sweepLocked(now time.Time) {
	for id := range s.entries {
		e := &s.entries[id]
		if e.labels != nil && !e.retiredAt.IsZero() && now.Sub(e.retiredAt) >= s.grace {
			delete(s.ids, e.key)
			*e = counterEntry{}
			s.free = append(s.free, uint16(id))
		}
	}
}

// each deletes what has been retired for longer than grace, then calls f
// for every counter left, in id order, with its sum over the shards.
func (s *counterSet) each(now time.Time, f func(labels []string, c Count)) {
	type item struct {
		labels []string
		count  Count
	}
	s.mu.Lock()
	s.sweepLocked(now)
	items := make([]item, 0, len(s.ids))
	for id, e := range s.entries {
		if e.labels != nil {
			items = append(items, item{e.labels, s.sum(uint16(id))})
		}
	}
	s.mu.Unlock()
	for _, it := range items {
		f(it.labels, it.count)
	}
}
