package classify

import (
	"encoding/binary"
	"math/bits"
	"net/netip"

	"github.com/sllbrd/sllbrd/model"
)

// key identifies the routes of one destination address (unmapped, as 16
// bytes split in two words) and protocol.
type key struct {
	hi, lo uint64
	proto  model.Protocol
}

func keyOf(a netip.Addr, proto model.Protocol) key {
	b := a.Unmap().As16()
	return key{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:]), proto: proto}
}

// keySlot is one slot of keyTable; block is the key's offset in the arena.
type keySlot struct {
	key
	used  bool
	block uint32
}

// keyTable is an open-addressing hash table (linear probing, at most half
// full) from key to arena offset. It is flat so that a lookup usually
// touches one cache line, which a Go map does not promise.
type keyTable struct {
	slots []keySlot
	shift uint8 // 64 - log2(len(slots))
}

func newKeyTable(n int) keyTable {
	size := 8
	for size < 2*n {
		size *= 2
	}
	return keyTable{slots: make([]keySlot, size), shift: uint8(64 - bits.TrailingZeros(uint(size)))}
}

func (t *keyTable) home(k key) int {
	h := (k.lo ^ bits.RotateLeft64(k.hi, 31) ^ uint64(k.proto)) * 0x9e3779b97f4a7c15
	return int(h >> t.shift)
}

// insert adds k, which must not be present yet.
func (t *keyTable) insert(k key, block uint32) {
	mask := len(t.slots) - 1
	i := t.home(k)
	for t.slots[i].used {
		i = (i + 1) & mask
	}
	t.slots[i] = keySlot{key: k, used: true, block: block}
}

// find returns the arena offset stored for k.
func (t *keyTable) find(k key) (uint32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if !s.used {
			return 0, false
		}
		if s.key == k {
			return s.block, true
		}
	}
}
