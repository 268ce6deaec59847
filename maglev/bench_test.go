package maglev

import "testing"

func benchmarkBuild(b *testing.B, n int, opts ...Option) {
	p := mustParams(b, n, opts...)
	active := allActive(n)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Build(active); err != nil {
			b.Fatal(err)
		}
	}
}

// The paper reports 1.8 ms for M=65537, N=1000.
func BenchmarkBuildM65537N1000(b *testing.B)  { benchmarkBuild(b, 1000, WithSize(65537)) }
func BenchmarkBuildDefaultN32(b *testing.B)   { benchmarkBuild(b, 32) }
func BenchmarkBuildDefaultN1000(b *testing.B) { benchmarkBuild(b, 1000) }

func BenchmarkLookup(b *testing.B) {
	tbl := mustBuild(b, mustParams(b, 32), allActive(32))
	hashes := flowHashes(1024)
	b.ReportAllocs()
	sum := 0
	i := 0
	for b.Loop() {
		slot, _ := tbl.Lookup32(hashes[i&1023])
		sum += slot
		i++
	}
	if sum < 0 {
		b.Fatal("impossible")
	}
}

// benchmarkHash measures latency: each hash's seed is the previous result,
// so calls cannot overlap (the dataplane's independent hashes overlap and
// run faster; see the Independent variant).
func benchmarkHash(b *testing.B, size int, hash func(seed uint64, key []byte) uint64) {
	key := hashKey(size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var h uint64
	for b.Loop() {
		h = hash(h, key)
	}
	if h == 1 {
		b.Log("unlikely")
	}
}

func hashKey(size int) []byte {
	key := make([]byte, size)
	for i := range key {
		key[i] = byte(i * 7)
	}
	return key
}

func BenchmarkHash13(b *testing.B) { benchmarkHash(b, 13, Hash) }
func BenchmarkHash37(b *testing.B) { benchmarkHash(b, 37, Hash) }
func BenchmarkHash40(b *testing.B) { benchmarkHash(b, 40, Hash) }

// BenchmarkHash37Independent measures throughput of unrelated hashes.
func BenchmarkHash37Independent(b *testing.B) {
	key := hashKey(37)
	b.SetBytes(37)
	b.ReportAllocs()
	var sum uint64
	for b.Loop() {
		sum += Hash(OffsetSeed, key)
	}
	if sum == 1 {
		b.Log("unlikely")
	}
}
