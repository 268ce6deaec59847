package maglev

import (
	"encoding/binary"
	"testing"
)

// allActive returns n true flags except for the listed slots.
func allActive(n int, except ...int) []bool {
	active := make([]bool, n)
	for i := range active {
		active[i] = true
	}
	for _, id := range except {
		active[id] = false
	}
	return active
}

// mustBuild builds a table with the default size or fails the test.
func mustBuild(t testing.TB, p *Params, active []bool) *Table {
	t.Helper()
	tbl, err := p.Build(active)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return tbl
}

// mustParams returns Params for n slots or fails the test.
func mustParams(t testing.TB, n int, opts ...Option) *Params {
	t.Helper()
	p, err := NewParams(n, opts...)
	if err != nil {
		t.Fatalf("NewParams(%d): %v", n, err)
	}
	return p
}

// flowKey writes a synthetic IPv4 5-tuple key for flow i into dst (13 bytes):
// source 10.x.y.z, destination 192.0.2.1, source port varying, port 80, TCP.
func flowKey(dst *[13]byte, i int) []byte {
	binary.BigEndian.PutUint32(dst[0:], 0x0a000000|uint32(i>>8))
	binary.BigEndian.PutUint32(dst[4:], 0xc0000201)
	binary.BigEndian.PutUint16(dst[8:], uint16(1024+i&0xff))
	binary.BigEndian.PutUint16(dst[10:], 80)
	dst[12] = 6
	return dst[:]
}

// flowHashes returns the flow hashes (JHash with FlowSeed, as both
// dataplane paths compute them) of n synthetic flows.
func flowHashes(n int) []uint32 {
	hashes := make([]uint32, n)
	var key [13]byte
	for i := range hashes {
		hashes[i] = JHash(flowKey(&key, i), FlowSeed)
	}
	return hashes
}

// keyHashes returns the 64-bit Hash of n synthetic flow keys.
func keyHashes(n int) []uint64 {
	hashes := make([]uint64, n)
	var key [13]byte
	for i := range hashes {
		hashes[i] = Hash(OffsetSeed, flowKey(&key, i))
	}
	return hashes
}
