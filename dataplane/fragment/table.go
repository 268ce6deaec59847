package fragment

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// MaxHeld is how many early later-fragments one datagram can park.
const MaxHeld = 8

const (
	ways    = 4  // entries per set
	stripes = 64 // mutexes; a power of two
)

// Key identifies one IP datagram: RFC 791 section 3.2 (IPv4) by source,
// destination, protocol and identification; RFC 8200 section 4.5 (IPv6) by
// source, destination and identification, so Proto is zero for IPv6.
type Key struct {
	Src, Dst netip.Addr
	Proto    uint8
	ID       uint32
}

// Stats are the table's counters since New.
type Stats struct {
	Hits      uint64 // later fragments that found their first fragment's value
	Misses    uint64 // later fragments that found nothing and were not held
	Held      uint64 // later fragments parked before their first fragment
	Released  uint64 // parked fragments handed back when the first fragment came
	Expired   uint64 // parked fragments handed back for dropping after the lifetime
	Evictions uint64 // live entries pushed out by a full set
	Stored    uint64 // first fragments remembered
}

type entry struct {
	key      Key
	hash     uint64
	expires  int64 // unix nanoseconds; 0 = free
	hasValue bool
	value    uint64
	nheld    uint8
	held     [MaxHeld]uint64
}

// Table maps datagrams to the value chosen for their first fragment.
type Table struct {
	sets     [][ways]entry
	mask     uint64
	lifetime int64
	locks    [stripes]sync.Mutex

	hits, misses, held, released, expired, evictions, stored atomic.Uint64
}

// Option configures a Table.
type Option func(*Table)

// WithLifetime sets how long an entry lives (default 2 s).
func WithLifetime(d time.Duration) Option {
	return func(t *Table) {
		if d > 0 {
			t.lifetime = int64(d)
		}
	}
}

// New returns a table holding about capacity datagrams (rounded up to a
// power of two sets of four entries; at least 64 entries).
func New(capacity int, opts ...Option) *Table {
	nsets := 16
	for nsets*ways < capacity {
		nsets <<= 1
	}
	t := &Table{
		sets:     make([][ways]entry, nsets),
		mask:     uint64(nsets - 1),
		lifetime: int64(2 * time.Second),
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Capacity returns the number of entries the table holds at most.
func (t *Table) Capacity() int { return len(t.sets) * ways }

// Stats returns a snapshot of the counters.
func (t *Table) Stats() Stats {
	return Stats{
		Hits: t.hits.Load(), Misses: t.misses.Load(), Held: t.held.Load(),
		Released: t.released.Load(), Expired: t.expired.Load(),
		Evictions: t.evictions.Load(), Stored: t.stored.Load(),
	}
}

// Tokens collects the held fragments an operation hands back. The caller owns
// it and resets it (Reset) before each operation; with the capacity that
// NewTokens gives, appending never allocates.
type Tokens struct {
	Release []uint64 // give these the verdict of their first fragment
	Drop    []uint64 // drop these: their datagram's entry expired or was evicted
}

// NewTokens returns a Tokens whose slices never need to grow.
func NewTokens() *Tokens {
	return &Tokens{Release: make([]uint64, 0, MaxHeld), Drop: make([]uint64, 0, MaxHeld)}
}

// Reset empties both lists, keeping their storage.
func (r *Tokens) Reset() { r.Release, r.Drop = r.Release[:0], r.Drop[:0] }

// Remember stores value for the datagram of a first fragment. Later fragments
// that were held waiting for it are appended to out.Release; fragments of an
// evicted datagram to out.Drop.
func (t *Table) Remember(k Key, value uint64, now time.Time, out *Tokens) {
	h := hashKey(&k)
	ts := now.UnixNano()
	mu, set := t.lock(h)
	defer mu.Unlock()
	e := t.find(set, &k, h, ts)
	if e == nil {
		e = t.victim(set, ts, out)
		*e = entry{key: k, hash: h}
	}
	e.expires = ts + t.lifetime
	e.hasValue, e.value = true, value
	t.stored.Add(1)
	if e.nheld > 0 {
		out.Release = append(out.Release, e.held[:e.nheld]...)
		t.released.Add(uint64(e.nheld))
		e.nheld = 0
	}
}

// Lookup returns the value stored for a later fragment's datagram. When there
// is none and hold is true, token is parked (held reports it) unless the
// datagram already parks MaxHeld fragments. Fragments of an evicted datagram
// are appended to out.Drop.
func (t *Table) Lookup(k Key, now time.Time, hold bool, token uint64, out *Tokens) (value uint64, found, held bool) {
	h := hashKey(&k)
	ts := now.UnixNano()
	mu, set := t.lock(h)
	defer mu.Unlock()
	e := t.find(set, &k, h, ts)
	if e != nil && e.hasValue {
		t.hits.Add(1)
		return e.value, true, false
	}
	if !hold {
		t.misses.Add(1)
		return 0, false, false
	}
	if e == nil {
		e = t.victim(set, ts, out)
		*e = entry{key: k, hash: h, expires: ts + t.lifetime}
	}
	if int(e.nheld) >= MaxHeld {
		t.misses.Add(1)
		return 0, false, false
	}
	e.held[e.nheld] = token
	e.nheld++
	t.held.Add(1)
	return 0, false, true
}

// Expire frees entries older than their lifetime and appends the tokens they
// still held to expired, for the caller to drop. Call it periodically (every
// few hundred milliseconds): held packets wait at most lifetime plus that.
func (t *Table) Expire(now time.Time, expired []uint64) []uint64 {
	ts := now.UnixNano()
	for i := range t.sets {
		mu := &t.locks[uint64(i)&(stripes-1)]
		mu.Lock()
		for w := range t.sets[i] {
			e := &t.sets[i][w]
			if e.expires != 0 && e.expires <= ts {
				expired = t.drain(e, expired)
				e.expires = 0
			}
		}
		mu.Unlock()
	}
	return expired
}

func (t *Table) lock(h uint64) (*sync.Mutex, *[ways]entry) {
	i := h & t.mask
	mu := &t.locks[i&(stripes-1)]
	mu.Lock()
	return mu, &t.sets[i]
}

// find returns the live entry for k, or nil.
func (t *Table) find(set *[ways]entry, k *Key, h uint64, now int64) *entry {
	for w := range set {
		e := &set[w]
		if e.expires > now && e.hash == h && e.key == *k {
			return e
		}
	}
	return nil
}

// victim returns a free or expired entry of the set, else the one expiring
// first, which is evicted. Fragments the victim still held go to out.Drop.
func (t *Table) victim(set *[ways]entry, now int64, out *Tokens) *entry {
	oldest := &set[0]
	for w := range set {
		e := &set[w]
		if e.expires <= now {
			out.Drop = t.drain(e, out.Drop)
			return e
		}
		if e.expires < oldest.expires {
			oldest = e
		}
	}
	t.evictions.Add(1)
	out.Drop = t.drain(oldest, out.Drop)
	return oldest
}

func (t *Table) drain(e *entry, out []uint64) []uint64 {
	if e.nheld > 0 {
		out = append(out, e.held[:e.nheld]...)
		t.expired.Add(uint64(e.nheld))
		e.nheld = 0
	}
	return out
}

// hashKey mixes the key with fixed constants (no per-process seed needed:
// the table is local to one process, but determinism keeps tests exact).
func hashKey(k *Key) uint64 {
	s, d := k.Src.As16(), k.Dst.As16()
	h := uint64(k.Proto)<<32 | uint64(k.ID)
	h = mix(h ^ binary.LittleEndian.Uint64(s[0:8]))
	h = mix(h ^ binary.LittleEndian.Uint64(s[8:16]))
	h = mix(h ^ binary.LittleEndian.Uint64(d[0:8]))
	h = mix(h ^ binary.LittleEndian.Uint64(d[8:16]))
	return h
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
