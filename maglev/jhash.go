package maglev

import (
	"encoding/binary"
	"math/bits"
)

// FlowSeed is the initial value of the flow hash (JHash) in both dataplane
// paths: the nftables rules (`jhash ... seed FlowSeed`) and the userspace
// decision. It must not be 0, which nftables reads as "draw a random seed"
// (net/netfilter/nft_hash.c, nft_jhash_init). Changing it sends flows to
// other entries, so every instance of a deployment must agree.
const FlowSeed uint32 = 0x736c6c62 // "sllb"

// jhashInitval is the constant Jenkins' lookup3 (and the kernel's
// JHASH_INITVAL, include/linux/jhash.h) adds to the seed and the length.
const jhashInitval = 0xdeadbeef

// JHash is the Linux kernel's jhash(key, length, initval)
// (include/linux/jhash.h), Bob Jenkins' lookup3 hash as nftables' "jhash"
// expression computes it over its source registers (nft_jhash_eval in
// net/netfilter/nft_hash.c). Implemented from the algorithm:
//
//   - the state a, b, c starts at 0xdeadbeef + len(key) + initval;
//   - while more than 12 bytes remain, three 32-bit words are added to a, b
//     and c and the state is mixed (jhashMix); the kernel reads these
//     words in the CPU's byte order, so this does too (binary.NativeEndian:
//     the result equals the kernel's on the same kind of machine);
//   - the last 1..12 bytes are added byte by byte, little-endian, byte i of
//     the block at bit 8*(i%4) of word i/4 (whatever the CPU), and the
//     state is finalised (jhashFinal); an empty key returns c unchanged.
//
// It returns c. It allocates nothing.
func JHash(key []byte, initval uint32) uint32 {
	a := jhashInitval + uint32(len(key)) + initval
	b, c := a, a
	for len(key) > 12 {
		a += binary.NativeEndian.Uint32(key[0:4])
		b += binary.NativeEndian.Uint32(key[4:8])
		c += binary.NativeEndian.Uint32(key[8:12])
		a, b, c = jhashMix(a, b, c)
		key = key[12:]
	}
	if len(key) == 0 {
		return c
	}
	var tail [3]uint32
	for i, v := range key {
		tail[i/4] |= uint32(v) << (8 * (i % 4))
	}
	return jhashFinal(a+tail[0], b+tail[1], c+tail[2])
}

// jhashMix is lookup3's mix(): it mixes three words reversibly.
func jhashMix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

// jhashFinal is lookup3's final(): it folds a and b into c.
func jhashFinal(a, b, c uint32) uint32 {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return c
}

// ReciprocalScale maps h onto [0, n) as the kernel's reciprocal_scale
// (include/linux/math.h) does, which nftables applies to the jhash result
// ("jhash ... mod n"): the high 32 bits of the 64-bit product h*n.
func ReciprocalScale(h, n uint32) uint32 {
	return uint32(uint64(h) * uint64(n) >> 32)
}
