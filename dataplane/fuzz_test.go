package dataplane

import (
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
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
		checkDecision(t, d)
		// As a GSO aggregate from a queue that holds its limit.
		e.DecideMeta(b, Meta{Length: len(b), Token: 2, GSO: true, HoldFull: true}, d)
		checkDecision(t, d)
		if d.Verdict == Hold {
			t.Fatalf("held although the queue holds its limit")
		}
	})
}

func checkDecision(t *testing.T, d *Decision) {
	t.Helper()
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
}

// seedPackets returns a sample of the bench pcaps.
func seedPackets(tb testing.TB) [][]byte {
	return testpkt.PcapSample(tb, "../bench/testdata/*.pcap", 20)
}
