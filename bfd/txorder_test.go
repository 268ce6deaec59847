package bfd

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

// orderServer returns a server (not running) with one new session, Down and
// due to send at once, writing to a blockingSender, and the marshalled Init
// of its peer that takes it Up (RFC 5880 section 6.8.6).
func orderServer(t *testing.T) (*Server, *entry, *blockingSender, []byte) {
	t.Helper()
	srv := NewServer()
	cfg := SessionConfig{Peer: netip.MustParseAddr("192.0.2.7")}
	if err := srv.Add(cfg); err != nil {
		t.Fatal(err)
	}
	e := srv.sessions[cfg.Key()]
	bs := newBlockingSender()
	e.conn = bs
	init := Packet{Version: 1, State: StateInit, DetectMult: 3, MyDiscriminator: 5,
		YourDiscriminator: e.sess.localDisc, DesiredMinTxUsec: 300000, RequiredMinRxUsec: 300000}
	return srv, e, bs, marshal(t, init)
}

// TestServerDropsSupersededPacket: a packet built before one already
// written for the same session is not written after it (the start flap: a
// stale Down written after the Up takes the peer, Up by then, Down).
func TestServerDropsSupersededPacket(t *testing.T) {
	srv, e, bs, initB := orderServer(t)
	close(bs.release)
	var init Packet
	if err := init.Unmarshal(initB); err != nil {
		t.Fatal(err)
	}
	older, newer := newOutbox(4), newOutbox(4)
	now := time.Now()
	srv.mu.Lock()
	older.collect(e, now) // the periodic Down, e.g. by the Run goroutine
	if tr, _ := e.sess.Receive(now, &init); tr.New != StateUp {
		srv.mu.Unlock()
		t.Fatalf("session %v after the peer's Init, want Up", tr.New)
	}
	newer.collect(e, now) // the Up, e.g. by a receive goroutine
	srv.mu.Unlock()
	srv.flush(newer)
	srv.flush(older) // its goroutine was slower to write
	if got := bs.written(); !slices.Equal(got, []State{StateUp}) {
		t.Fatalf("written %v, want [Up]: the older Down must be dropped", got)
	}
	if st, _ := srv.Stats(e.key); st.PacketsSuperseded != 1 {
		t.Fatalf("PacketsSuperseded %d, want 1", st.PacketsSuperseded)
	}
}

// TestServerWritesSessionPacketsInOrder: while one goroutine writes a
// session's packet, receive goroutines that build newer ones neither write
// them first nor wait: the newest goes out after the one in flight.
func TestServerWritesSessionPacketsInOrder(t *testing.T) {
	srv, e, bs, initB := orderServer(t)
	defer func() {
		select {
		case <-bs.release:
		default:
			close(bs.release)
		}
	}()
	var readers sync.WaitGroup
	ticked := make(chan struct{})
	go func() { srv.tick(context.Background(), &readers); close(ticked) }() // writes the Down
	select {
	case <-bs.writing:
	case <-time.After(10 * time.Second):
		t.Fatal("no packet written within 10 s")
	}
	var poll Packet
	if err := poll.Unmarshal(initB); err != nil {
		t.Fatal(err)
	}
	poll.State, poll.Poll = StateUp, true
	// The peer's Init takes the session Up (an Up is due at once), then
	// its Poll asks for a Final (due at once too, superseding that Up).
	for _, b := range [][]byte{initB, marshal(t, poll)} {
		received := make(chan struct{})
		go func() {
			srv.receive(newOutbox(4), &Packet{}, b, e.key.Peer, ancillary{ttl: ttlMax}, listenerKind{})
			close(received)
		}()
		select {
		case <-received:
		case <-time.After(5 * time.Second):
			t.Fatal("reception waited 5 s for another goroutine's write")
		}
	}
	if st := stateOf(srv, e.key); st != StateUp {
		t.Fatalf("session %v after the peer's Init, want Up", st)
	}
	close(bs.release)
	<-ticked
	if got := bs.written(); !slices.Equal(got, []State{StateDown, StateUp}) {
		t.Fatalf("written %v, want [Down Up]: a session's packets must reach its socket in the order they were built", got)
	}
	if st, _ := srv.Stats(e.key); st.PacketsSuperseded != 1 || st.PacketsOut != 3 {
		t.Fatalf("PacketsSuperseded %d of PacketsOut %d, want 1 of 3", st.PacketsSuperseded, st.PacketsOut)
	}
}
