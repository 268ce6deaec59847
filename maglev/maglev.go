package maglev

import (
	"encoding/binary"
	"fmt"
)

// Seeds of the slot permutation: offset = Hash(OffsetSeed, id) mod M and
// skip = Hash(SkipSeed, id) mod (M-1) + 1, where id is the slot identifier
// as 8 little-endian bytes. Changing them changes every table.
const (
	OffsetSeed uint64 = 0x736c6c6272642d6f // "sllbrd-o"
	SkipSeed   uint64 = 0x736c6c6272642d73 // "sllbrd-s"
)

// emptyEntry marks an unfilled entry while building; never a slot because
// slot identifiers are below MaxSlots.
const emptyEntry = MaxSlots

// Params fixes the number of slots N and the table size M of one Service and
// holds every slot's permutation. It is immutable and safe for concurrent
// use; build one per Service and call Build for every change of endpoints.
type Params struct {
	slots  int
	size   int
	offset []uint32
	skip   []uint32
}

// Option configures NewParams.
type Option func(*options)

type options struct {
	size    int
	sizeSet bool
}

// WithSize sets the table size M explicitly instead of DefaultSize(N). M must
// be prime, greater than N and at most MaxSize.
func WithSize(m int) Option {
	return func(o *options) { o.size, o.sizeSet = m, true }
}

// NewParams returns the parameters for n slots (identifiers 0..n-1,
// 1 <= n <= MaxSlots).
func NewParams(n int, opts ...Option) (*Params, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	m, err := DefaultSize(n)
	if err != nil {
		return nil, err
	}
	if o.sizeSet {
		if err := validateSize(o.size, n); err != nil {
			return nil, err
		}
		m = o.size
	}
	p := &Params{slots: n, size: m, offset: make([]uint32, n), skip: make([]uint32, n)}
	for id := range n {
		p.offset[id], p.skip[id] = permutation(id, m)
	}
	return p, nil
}

// permutation returns the first entry and the step of slot id's walk over a
// table of prime size m; it depends on nothing else.
func permutation(id, m int) (offset, skip uint32) {
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], uint64(id))
	offset = uint32(Hash(OffsetSeed, key[:]) % uint64(m))
	skip = uint32(Hash(SkipSeed, key[:])%uint64(m-1)) + 1
	return offset, skip
}

// Slots returns N.
func (p *Params) Slots() int { return p.slots }

// Size returns M.
func (p *Params) Size() int { return p.size }

// Build returns a new table in which exactly the slots id with active[id]
// true own entries. len(active) must be N. No active slot is valid: the
// table then answers every Lookup with ok=false.
func (p *Params) Build(active []bool) (*Table, error) {
	if len(active) != p.slots {
		return nil, fmt.Errorf("maglev: %d active flags for %d slots", len(active), p.slots)
	}
	ids := make([]uint16, 0, p.slots)
	for id, on := range active {
		if on {
			ids = append(ids, uint16(id))
		}
	}
	t := &Table{size: p.size, counts: make([]uint32, p.slots), active: len(ids)}
	if len(ids) == 0 {
		return t, nil
	}
	t.entries = p.populate(ids)
	for _, id := range t.entries {
		t.counts[id]++
	}
	return t, nil
}

// Build is NewParams(n, opts...) followed by Build(active).
func Build(n int, active []bool, opts ...Option) (*Table, error) {
	p, err := NewParams(n, opts...)
	if err != nil {
		return nil, err
	}
	return p.Build(active)
}

// populate runs the paper's round-robin fill: in each round every active slot
// in turn claims the next still-empty entry of its permutation. It needs at
// least one id; each claim fills one entry, so it stops after exactly M
// claims, and each search ends because a permutation of a prime-sized table
// visits every entry.
func (p *Params) populate(ids []uint16) []uint16 {
	m := uint32(p.size)
	entries := make([]uint16, m)
	for i := range entries {
		entries[i] = emptyEntry
	}
	next := make([]uint32, len(ids))
	for i, id := range ids {
		next[i] = p.offset[id]
	}
	for filled := uint32(0); ; {
		for i, id := range ids {
			c, skip := next[i], p.skip[id]
			for entries[c] != emptyEntry {
				if c += skip; c >= m {
					c -= m
				}
			}
			entries[c] = id
			if c += skip; c >= m {
				c -= m
			}
			next[i] = c
			if filled++; filled == m {
				return entries
			}
		}
	}
}
