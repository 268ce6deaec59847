package maglev

import "math/bits"

// Table is one built Maglev lookup table. It is immutable: share it between
// goroutines freely and replace it as a whole (atomic.Pointer[Table]).
type Table struct {
	size    int
	active  int
	counts  []uint32 // entries owned per slot
	entries []uint16 // slot per entry; empty when no slot is active
}

// Lookup returns the slot that owns the entry for the flow hash, and
// ok=false when no slot is active or t is nil. It allocates nothing.
func (t *Table) Lookup(hash uint64) (slot int, ok bool) {
	if t == nil || len(t.entries) == 0 {
		return 0, false
	}
	i, _ := bits.Mul64(hash, uint64(len(t.entries)))
	return int(t.entries[i]), true
}

// Lookup32 returns the slot that owns entry ReciprocalScale(h, M), the
// entry nftables picks for "jhash ... mod M" with hash h, and ok=false when
// no slot is active or t is nil. It equals Lookup(uint64(h) << 32) and
// allocates nothing.
func (t *Table) Lookup32(h uint32) (slot int, ok bool) {
	if t == nil || len(t.entries) == 0 {
		return 0, false
	}
	return int(t.entries[ReciprocalScale(h, uint32(len(t.entries)))]), true
}

// AppendEntrySlots appends, for every entry 0..M-1 in order, the slot that
// owns it (nothing when no slot is active) and returns the extended slice:
// the table as the kernel's map holds it.
func (t *Table) AppendEntrySlots(dst []uint16) []uint16 {
	if t == nil {
		return dst
	}
	return append(dst, t.entries...)
}

// Size returns M, the number of entries.
func (t *Table) Size() int { return t.size }

// Slots returns N, the number of slot identifiers.
func (t *Table) Slots() int { return len(t.counts) }

// ActiveSlots returns how many slots own entries.
func (t *Table) ActiveSlots() int { return t.active }

// Entries returns how many of the M entries slot owns (0 for an inactive or
// out-of-range slot); Entries(slot)/Size() is its expected share of flows.
func (t *Table) Entries(slot int) int {
	if slot < 0 || slot >= len(t.counts) {
		return 0
	}
	return int(t.counts[slot])
}
