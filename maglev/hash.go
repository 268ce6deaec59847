package maglev

import (
	"encoding/binary"
	"math/bits"
)

// Odd 64-bit multipliers with well-mixed bit patterns, as commonly used for
// multiplicative hashing (the first is derived from the golden ratio).
const (
	mulA = 0x9E3779B185EBCA87
	mulB = 0xC2B2AE3D27D4EB4F
	mulC = 0x165667B19E3779F9
	mulD = 0xD6E8FEB86659FD93
)

// Hash returns the 64-bit hash of key under seed.
//
// The algorithm, fixed forever because tables and flows depend on it:
// two accumulators a = seed+mulA and b = seed^mulB absorb alternate 8-byte
// little-endian words of each 16-byte block with round(acc, w) =
// rotl(acc + w*mulB, 31) * mulA (xxHash64's round and primes; a bijection
// of acc for every w). They are
// folded into h = a ^ rotl(b, 27) ^ len*mulC; a remaining 8-byte word and
// then a remaining tail of 1..7 bytes (packed as described in tailWord) are
// absorbed into h with the same round. The result is finalize(h): the
// 128-bit product (h ^ h>>32) * mulD folded by XOR of its two halves.
func Hash(seed uint64, key []byte) uint64 {
	n := uint64(len(key))
	a := seed + mulA
	b := seed ^ mulB
	for len(key) >= 16 {
		a = round(a, binary.LittleEndian.Uint64(key))
		b = round(b, binary.LittleEndian.Uint64(key[8:]))
		key = key[16:]
	}
	h := a ^ bits.RotateLeft64(b, 27) ^ n*mulC
	if len(key) >= 8 {
		h = round(h, binary.LittleEndian.Uint64(key))
		key = key[8:]
	}
	if len(key) > 0 {
		h = round(h, tailWord(key))
	}
	return finalize(h)
}

// round absorbs one 8-byte word into an accumulator.
func round(acc, w uint64) uint64 {
	return bits.RotateLeft64(acc+w*mulB, 31) * mulA
}

// tailWord packs 1..7 bytes into one word, injectively for a given length:
// 4..7 bytes as the little-endian uint32 of the first four bytes in the low
// half and of the last four (overlapping) in the high half; 1..3 bytes as
// the first, middle and last byte in bits 0-7, 8-15 and 16-23.
func tailWord(k []byte) uint64 {
	n := len(k)
	if n >= 4 {
		lo := binary.LittleEndian.Uint32(k)
		hi := binary.LittleEndian.Uint32(k[n-4:])
		return uint64(lo) | uint64(hi)<<32
	}
	return uint64(k[0]) | uint64(k[n/2])<<8 | uint64(k[n-1])<<16
}

// finalize spreads every input bit over every output bit (TestHashAvalanche
// bounds the bias).
func finalize(h uint64) uint64 {
	hi, lo := bits.Mul64(h^h>>32, mulD)
	return hi ^ lo
}
