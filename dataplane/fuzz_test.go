package dataplane

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// FuzzDecide runs arbitrary bytes through the whole decision: it must never
// panic, and every packet ends in exactly one consistent verdict.
func FuzzDecide(f *testing.F) {
	for _, b := range seedPackets(f) {
		f.Add(b)
	}
	e, _ := newTestEngine(f, testState())
	d := NewDecision()
	f.Fuzz(func(t *testing.T, b []byte) {
		e.Decide(b, len(b), 1, d)
		switch {
		case d.Verdict == Accept && d.Mark == 0:
			t.Fatalf("accepted without a mark (reason %v)", d.Reason)
		case d.Verdict != Accept && d.Mark != 0:
			t.Fatalf("%v with mark %d", d.Verdict, d.Mark)
		case d.Reason >= numReasons:
			t.Fatalf("reason %d out of range", d.Reason)
		case (d.Verdict == Hold) != (d.Reason == ReasonFragmentHeld):
			t.Fatalf("verdict %v with reason %v", d.Verdict, d.Reason)
		}
	})
}

// seedPackets returns the packets of the bench pcaps (a sample of each).
func seedPackets(tb testing.TB) [][]byte {
	files, _ := filepath.Glob("../bench/testdata/*.pcap")
	var out [][]byte
	for _, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			tb.Fatal(err)
		}
		r, err := pcapgo.NewReader(fh)
		if err != nil {
			tb.Fatal(err)
		}
		for i := 0; ; i++ {
			data, _, err := r.ReadPacketData()
			if err != nil {
				break
			}
			if i%20 == 0 {
				out = append(out, data)
			}
		}
		fh.Close()
	}
	if len(out) == 0 {
		tb.Fatal("no seed packets: bench/testdata/*.pcap missing")
	}
	return out
}
