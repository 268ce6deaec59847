package main

import "testing"

// TestSearchRecord: a loss-free probe raises the best rate to what it
// received; the search goes higher only after a probe that offered its
// rate loss-free; a sender-limited best is flagged.
func TestSearchRecord(t *testing.T) {
	at := func(rate float64, sent, recv uint64) probe {
		return probe{rate: rate, smp: sample{blast: blastAt(sent, recv)}}
	}
	var r searchResult
	if !r.record(at(100, 100, 100)) || r.best != 100 || r.senderLimited {
		t.Fatalf("after a loss-free probe: %+v", r)
	}
	if r.record(at(300, 200, 200)) || r.best != 200 || !r.senderLimited {
		t.Fatalf("after a sender-limited loss-free probe: %+v, want best 200, sender-limited, no higher", r)
	}
	if r.record(at(250, 250, 240)) || r.best != 200 {
		t.Fatalf("after a lossy probe: %+v, want best 200, no higher", r)
	}
	if len(r.probes) != 3 {
		t.Errorf("%d probes recorded, want 3", len(r.probes))
	}
}
