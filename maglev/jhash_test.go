package maglev

import "testing"

// TestJHashVectors checks JHash against the values Bob Jenkins published
// with lookup3.c (its driver5 self-test: hashlittle, which the kernel's
// jhash is on a little-endian machine), independently of this code.
func TestJHashVectors(t *testing.T) {
	const fourScore = "Four score and seven years ago"
	for _, tc := range []struct {
		key     string
		initval uint32
		want    uint32
	}{
		{"", 0, 0xdeadbeef},
		{fourScore, 0, 0x17770551},
		{fourScore, 1, 0xcd628161},
	} {
		if got := JHash([]byte(tc.key), tc.initval); got != tc.want {
			t.Errorf("JHash(%q, %d) = %#08x, want %#08x", tc.key, tc.initval, got, tc.want)
		}
	}
}

func TestJHashAllocatesNothing(t *testing.T) {
	key := make([]byte, 44)
	for _, n := range []int{0, 12, 20, 44} {
		if allocs := testing.AllocsPerRun(100, func() { JHash(key[:n], FlowSeed) }); allocs != 0 {
			t.Errorf("JHash of %d bytes: %v allocs, want 0", n, allocs)
		}
	}
}

// TestReciprocalScale: the entry is (h*n)>>32, always below n, and
// Lookup32(h) is Lookup(h<<32).
func TestReciprocalScale(t *testing.T) {
	for _, tc := range []struct{ h, n, want uint32 }{
		{0, 16381, 0}, {0xffffffff, 16381, 16380}, {0x80000000, 16381, 8190}, {0x80000000, 2, 1},
	} {
		if got := ReciprocalScale(tc.h, tc.n); got != tc.want {
			t.Errorf("ReciprocalScale(%#x, %d) = %d, want %d", tc.h, tc.n, got, tc.want)
		}
	}
	tbl := mustBuild(t, mustParams(t, 32), everyKth(32, 3))
	for _, h := range flowHashes(10000) {
		a, okA := tbl.Lookup32(h)
		b, okB := tbl.Lookup(uint64(h) << 32)
		if a != b || okA != okB {
			t.Fatalf("Lookup32(%#x) = %d, Lookup(h<<32) = %d", h, a, b)
		}
	}
}

// TestJHashSpread: 1e5 flow hashes scaled onto 64 buckets (as Lookup32
// does) pass a chi-square test (63 degrees of freedom; 110 is exceeded with
// probability below 0.02%).
func TestJHashSpread(t *testing.T) {
	const flows, buckets = 100000, 64
	var counts [buckets]float64
	for _, h := range flowHashes(flows) {
		counts[ReciprocalScale(h, buckets)]++
	}
	chi2 := 0.0
	for _, c := range counts {
		d := c - flows/buckets
		chi2 += d * d / (flows / buckets)
	}
	if chi2 > 110 {
		t.Errorf("chi-square %.1f over 64 buckets, want < 110", chi2)
	}
}

// TestJHashAvalanche flips every input bit of keys of the flow key lengths
// and requires every output bit to flip with probability 0.5 +- 0.1.
func TestJHashAvalanche(t *testing.T) {
	rng := splitmix(4)
	for _, n := range []int{12, 20, 44} {
		checkAvalanche(t, &rng, n, 32, func(seed uint64, key []byte) uint64 {
			return uint64(JHash(key, uint32(seed)))
		})
	}
}

// The flow hash of an IPv4 and of an IPv6 five-tuple (see benchmarkHash).
func BenchmarkJHash20(b *testing.B) { benchmarkHash(b, 20, jhash64) }
func BenchmarkJHash44(b *testing.B) { benchmarkHash(b, 44, jhash64) }

func jhash64(seed uint64, key []byte) uint64 { return uint64(JHash(key, uint32(seed))) }
