package maglev

import "testing"

// FuzzBuild builds tables for arbitrary active sets, slot counts and prime
// sizes (often barely above N, the hardest case for populate) and checks
// that Build terminates without panicking, that entries are balanced over
// the active slots only and that lookups return active slots only.
// Run: go test ./maglev -run '^$' -fuzz FuzzBuild -fuzztime 60s
func FuzzBuild(f *testing.F) {
	f.Add([]byte{}, uint16(0), uint8(0))
	f.Add([]byte{0xff}, uint16(7), uint8(1))
	f.Add([]byte{0x01, 0x80}, uint16(15), uint8(3))
	f.Add([]byte{0xaa, 0x55, 0xff, 0x00}, uint16(31), uint8(4))
	probes := flowHashes(512)
	f.Fuzz(func(t *testing.T, flags []byte, n16 uint16, sizeChoice uint8) {
		n := 1 + int(n16)%512
		var opts []Option
		if sizeChoice%4 != 0 { // a prime just above N instead of the default
			m := n + 1 + int(sizeChoice/4)
			for !isPrime(m) {
				m++
			}
			opts = append(opts, WithSize(m))
		}
		active := make([]bool, n)
		for id := range active {
			if id/8 < len(flags) {
				active[id] = flags[id/8]>>(id%8)&1 == 1
			}
		}
		tbl, err := Build(n, active, opts...)
		if err != nil {
			t.Fatalf("Build(%d, ..., %d options): %v", n, len(opts), err)
		}
		if tbl.ActiveSlots() == 0 {
			for _, h := range probes {
				if slot, ok := tbl.Lookup32(h); ok {
					t.Fatalf("Lookup = %d, true without active slots", slot)
				}
			}
			return
		}
		checkTable(t, tbl, active, probes)
	})
}
