package dataplane

import (
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

// fakeQueue records the verdicts given to held packets.
type fakeQueue map[uint32]nfqueue.Verdict

func (q fakeQueue) Release(id uint32, v nfqueue.Verdict) error { q[id] = v; return nil }

func testHandler(e *Engine, num uint16, limit int64) (*queueHandler, fakeQueue) {
	q := fakeQueue{}
	return newQueueHandler(e, servedQueues{num: {queue: q, limit: limit}}, num), q
}

func TestQueueHandlerReleasesHeldFragments(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	h, released := testHandler(e, 3, HoldLimit(nfqueue.DefaultQueueMaxLen))
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
	if r, ok := released[10]; !ok || r.Action != nfqueue.Accept || r.Mark != v.Mark {
		t.Fatalf("held fragment released as %+v (found %v), want accept with mark %d", r, ok, v.Mark)
	}
	if n := h.served.held.Load(); n != 0 {
		t.Errorf("%d packets counted as held after the release", n)
	}
}

// TestQueueHandlerCapsHeldFragments: a queue holds at most its limit of
// early fragments; beyond it they are dropped at once (the kernel queue
// keeps room for everything else), and a release makes room again.
func TestQueueHandlerCapsHeldFragments(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	const limit = 4
	h, released := testHandler(e, 0, limit)
	datagram := func(id uint32) [][]byte {
		return testpkt.Fragments(flow(addr("10.0.0.9"), vip4, 17, 3333, 5000), make([]byte, 2000), 1200, id)
	}
	var v nfqueue.Verdict
	handle := func(id uint32, b []byte) nfqueue.Action {
		v = nfqueue.Verdict{}
		h.Handle(&nfqueue.Packet{ID: id, Payload: b, Length: len(b)}, &v)
		return v.Action
	}
	for i := range uint32(limit) {
		if a := handle(i, datagram(i)[1]); a != nfqueue.Hold {
			t.Fatalf("early fragment %d of %d: %v, want hold", i, limit, a)
		}
	}
	if a := handle(100, datagram(100)[1]); a != nfqueue.Drop || h.d.Reason != ReasonFragmentHoldLimit {
		t.Fatalf("early fragment beyond the limit: %v/%v, want drop/fragment_hold_limit", a, h.d.Reason)
	}
	if a := handle(200, datagram(0)[0]); a != nfqueue.Accept || released[0].Action != nfqueue.Accept {
		t.Fatalf("first fragment of a held datagram: %v, released %v", a, released)
	}
	if a := handle(101, datagram(101)[1]); a != nfqueue.Hold {
		t.Errorf("early fragment after a release: %v, want hold", a)
	}
	if got := h.served.held.Load(); got != limit {
		t.Errorf("held count %d, want %d", got, limit)
	}
}

func TestQueueHandlerAllocatesNothing(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	h, _ := testHandler(e, 1, 1)
	b := testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, 1000, 80), nil, testpkt.Options{})
	p := &nfqueue.Packet{ID: 1, Payload: b, Length: len(b), SkbInfo: nfqueue.SkbGSO}
	var v nfqueue.Verdict
	if n := testing.AllocsPerRun(1000, func() { h.Handle(p, &v) }); n != 0 {
		t.Fatalf("Handle allocates %v times per packet", n)
	}
}
