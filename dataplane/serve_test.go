package dataplane

import (
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

func TestQueueHandlerReleasesHeldFragments(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	released := map[uint64]nfqueue.Verdict{}
	h := &queueHandler{engine: e, queue: 3 << 32, d: NewDecision(),
		release: func(tok uint64, v nfqueue.Verdict) { released[tok] = v }}
	frags := testpkt.Fragments(flow(addr("10.0.0.9"), vip4, 17, 3333, 5000), make([]byte, 2000), 1200, 42)
	var v nfqueue.Verdict
	h.Handle(&nfqueue.Packet{ID: 10, Payload: frags[1], Length: len(frags[1])}, &v)
	if v.Action != nfqueue.Hold {
		t.Fatalf("early fragment verdict %v, want hold", v.Action)
	}
	v = nfqueue.Verdict{}
	h.Handle(&nfqueue.Packet{ID: 11, Payload: frags[0], Length: len(frags[0])}, &v)
	if v.Action != nfqueue.Accept || !v.SetMark || v.Mark == 0 {
		t.Fatalf("first fragment verdict %+v", v)
	}
	if r, ok := released[3<<32|10]; !ok || r.Action != nfqueue.Accept || r.Mark != v.Mark {
		t.Fatalf("held fragment released as %+v (found %v), want accept with mark %d", r, ok, v.Mark)
	}
}

func TestQueueHandlerAllocatesNothing(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	h := &queueHandler{engine: e, queue: 1 << 32, d: NewDecision(), release: func(uint64, nfqueue.Verdict) {}}
	b := testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, 1000, 80), nil, testpkt.Options{})
	p := &nfqueue.Packet{ID: 1, Payload: b, Length: len(b)}
	var v nfqueue.Verdict
	if n := testing.AllocsPerRun(1000, func() { h.Handle(p, &v) }); n != 0 {
		t.Fatalf("Handle allocates %v times per packet", n)
	}
}
