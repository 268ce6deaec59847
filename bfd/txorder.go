package bfd

import "sync"

// txOrder makes a session's packets reach its socket in the order they were
// built, although more than one goroutine writes them (the Run goroutine and
// the receive goroutines) and none holds Server.mu while writing. Every
// packet carries the session's sequence number, stamped under Server.mu when
// it is built (outbox.collect). A writer drops a packet older than one
// already written: a BFD Control packet carries the session's whole state,
// so the newer one supersedes it. A writer never waits for another
// goroutine's write either: while one is in progress it leaves its packet to
// that writer, which writes the newest packet left to it before returning.
// So a slow send delays only its own session's packets.
type txOrder struct {
	mu         sync.Mutex
	last       uint64    // sequence of the newest packet written or being written
	writing    bool      // a goroutine is writing this session's packets
	pending    outPacket // the newest packet left to that goroutine
	hasPending bool
	superseded uint64 // packets dropped because a newer one went first
}

// send writes p, in order with its session's other packets, unless a newer
// one has been written. Called without Server.mu.
func (o *outbox) send(p *outPacket) {
	t := &p.e.tx
	t.mu.Lock()
	switch {
	case p.seq <= t.last, t.hasPending && t.pending.seq > p.seq:
		t.superseded++
		t.mu.Unlock()
		return
	case t.writing:
		if t.hasPending {
			t.superseded++
		}
		t.pending, t.hasPending = *p, true
		t.mu.Unlock()
		return
	}
	t.writing, t.last = true, p.seq
	t.mu.Unlock()
	for {
		o.write(p)
		t.mu.Lock()
		if !t.hasPending {
			t.writing = false
			t.mu.Unlock()
			o.taken = outPacket{} // drop the references to the entry and socket
			return
		}
		o.taken, t.pending, t.hasPending = t.pending, outPacket{}, false
		t.last = o.taken.seq
		t.mu.Unlock()
		p = &o.taken
	}
}

// supersededCount returns how many of the session's packets were dropped
// for a newer one.
func (t *txOrder) supersededCount() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.superseded
}
