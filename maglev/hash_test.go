package maglev

import (
	"fmt"
	"math/bits"
	"testing"
)

// splitmix is a deterministic test-only generator of well-spread words.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

func (s *splitmix) fill(b []byte) {
	for i := range b {
		b[i] = byte(s.next())
	}
}

func TestHashAllocatesNothing(t *testing.T) {
	key := make([]byte, 40)
	for _, n := range []int{0, 7, 13, 37, 40} {
		if allocs := testing.AllocsPerRun(100, func() { Hash(OffsetSeed, key[:n]) }); allocs != 0 {
			t.Errorf("Hash of %d bytes: %v allocs, want 0", n, allocs)
		}
	}
}

// TestHashAvalanche flips every input bit of keys of every length up to 40
// bytes and requires every output bit to flip with probability 0.5 +- 0.1
// (1000 samples: the bound is 6 standard deviations).
func TestHashAvalanche(t *testing.T) {
	rng := splitmix(1)
	for n := 1; n <= 40; n++ {
		checkAvalanche(t, &rng, n, 64, Hash)
	}
}

// checkAvalanche flips every bit of 1000 random keys of n bytes and fails
// unless each of the hash's outBits output bits flips with probability 0.5
// +- 0.1 (6 standard deviations).
func checkAvalanche(t *testing.T, rng *splitmix, n, outBits int, hash func(seed uint64, key []byte) uint64) {
	t.Helper()
	const samples = 1000
	key := make([]byte, n)
	flips := make([][64]int, 8*n)
	for range samples {
		rng.fill(key)
		seed := rng.next()
		h := hash(seed, key)
		for bit := range 8 * n {
			key[bit/8] ^= 1 << (bit % 8)
			diff := h ^ hash(seed, key)
			key[bit/8] ^= 1 << (bit % 8)
			for out := range outBits {
				flips[bit][out] += int(diff >> out & 1)
			}
		}
	}
	for bit := range flips {
		for out, c := range flips[bit][:outBits] {
			if p := float64(c) / samples; p < 0.4 || p > 0.6 {
				t.Fatalf("len %d: input bit %d flips output bit %d with p=%.3f", n, bit, out, p)
			}
		}
	}
}

func TestHashSeedAvalanche(t *testing.T) {
	const samples = 2000
	rng := splitmix(2)
	key := make([]byte, 13)
	var flips [64][64]int
	for range samples {
		rng.fill(key)
		seed := rng.next()
		h := Hash(seed, key)
		for bit := range 64 {
			diff := h ^ Hash(seed^1<<bit, key)
			for out := range 64 {
				flips[bit][out] += int(diff >> out & 1)
			}
		}
	}
	for bit := range flips {
		for out, c := range flips[bit] {
			if p := float64(c) / samples; p < 0.4 || p > 0.6 {
				t.Fatalf("seed bit %d flips output bit %d with p=%.3f", bit, out, p)
			}
		}
	}
}

// TestHashLengthMatters: keys that differ only by trailing zero bytes differ.
func TestHashLengthMatters(t *testing.T) {
	seen := map[uint64]int{}
	zeros := make([]byte, 64)
	for n := range zeros {
		h := Hash(OffsetSeed, zeros[:n])
		if m, dup := seen[h]; dup {
			t.Fatalf("%d and %d zero bytes hash alike: %#x", m, n, h)
		}
		seen[h] = n
	}
}

// TestTailWordInjective: distinct tails of one length pack to distinct words
// (exhaustive for 1 and 2 bytes, 200000 distinct keys otherwise).
func TestTailWordInjective(t *testing.T) {
	rng := splitmix(3)
	for n := 1; n <= 7; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			words := map[uint64]string{}
			key := make([]byte, n)
			for i := range 200000 {
				if n <= 2 {
					if i >= 1<<(8*n) {
						break
					}
					key[0], key[n-1] = byte(i), byte(i>>(8*(n-1)))
				} else {
					rng.fill(key)
				}
				w := tailWord(key)
				if prev, ok := words[w]; ok && prev != string(key) {
					t.Fatalf("tails %x and %x pack to %#x", prev, key, w)
				}
				words[w] = string(key)
			}
		})
	}
}

// TestHashSpread: 1e5 flow hashes put into 64 buckets by their high bits (as
// Lookup does) and by their low bits pass a chi-square test (63 degrees of
// freedom; 110 is exceeded with probability below 0.02%).
func TestHashSpread(t *testing.T) {
	const flows, buckets = 100000, 64
	var high, low [buckets]float64
	for _, h := range keyHashes(flows) {
		hi, _ := bits.Mul64(h, buckets)
		high[hi]++
		low[h%buckets]++
	}
	for name, counts := range map[string][buckets]float64{"high": high, "low": low} {
		chi2 := 0.0
		for _, c := range counts {
			d := c - flows/buckets
			chi2 += d * d / (flows / buckets)
		}
		if chi2 > 110 {
			t.Errorf("%s bits: chi-square %.1f over 64 buckets, want < 110", name, chi2)
		}
	}
}
