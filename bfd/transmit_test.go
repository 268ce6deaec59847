package bfd

import (
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// blockingSender is a transmit socket whose first write blocks until
// release is closed; the others pass. It records the state of every packet
// when its write completes.
type blockingSender struct {
	once    sync.Once
	writing chan struct{} // closed when the first write starts
	release chan struct{}

	mu     sync.Mutex
	states []State // of the packets written, in the order their writes completed
}

func newBlockingSender() *blockingSender {
	return &blockingSender{writing: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockingSender) WriteToUDPAddrPort(p []byte, _ netip.AddrPort) (int, error) {
	first := false
	b.once.Do(func() { first = true; close(b.writing) })
	if first {
		<-b.release
	}
	var pkt Packet
	if err := pkt.Unmarshal(p); err != nil {
		return 0, err
	}
	b.mu.Lock()
	b.states = append(b.states, pkt.State)
	b.mu.Unlock()
	return len(p), nil
}

func (b *blockingSender) written() []State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]State(nil), b.states...)
}

func (b *blockingSender) Close() error { return nil }

// lockFreeWhileWriting fails the test unless s.mu can be taken (through
// Stats) while bs is blocked in a write.
func lockFreeWhileWriting(t *testing.T, s *Server, key Key, bs *blockingSender) {
	t.Helper()
	defer close(bs.release)
	select {
	case <-bs.writing:
	case <-time.After(10 * time.Second):
		t.Fatal("no packet written within 10 s")
	}
	got := make(chan struct{})
	go func() { s.Stats(key); close(got) }()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("Server.mu is held while a socket is written: Stats blocked for 5 s behind a write")
	}
}

// TestServerWritesWithoutLock: a socket write that blocks must not block
// the server's lock (the periodic transmit path and the receive path).
func TestServerWritesWithoutLock(t *testing.T) {
	cfg := SessionConfig{Peer: netip.MustParseAddr("192.0.2.7"), DesiredMinTx: 50 * time.Millisecond}
	t.Run("tick", func(t *testing.T) {
		bs := newBlockingSender()
		srv := NewServer(WithListenPorts(freeUDPPort(t), freeUDPPort(t)))
		srv.dial = func(context.Context, SessionConfig, *rand.Rand) (sender, error) { return bs, nil }
		if err := srv.Add(cfg); err != nil {
			t.Fatal(err)
		}
		runServer(t, srv)
		lockFreeWhileWriting(t, srv, cfg.Key(), bs)
	})
	t.Run("receive", func(t *testing.T) {
		bs := newBlockingSender()
		srv := NewServer()
		if err := srv.Add(cfg); err != nil {
			t.Fatal(err)
		}
		srv.sessions[cfg.Key()].conn = bs
		st, _ := srv.Stats(cfg.Key())
		// The peer's Down moves us to Init, which is sent at once.
		down := Packet{Version: 1, State: StateDown, DetectMult: 3, MyDiscriminator: 5,
			YourDiscriminator: st.LocalDiscriminator, DesiredMinTxUsec: 300000, RequiredMinRxUsec: 300000}
		b := marshal(t, down)
		go srv.receive(newOutbox(4), &Packet{}, b, cfg.Peer, ancillary{ttl: 255}, listenerKind{})
		lockFreeWhileWriting(t, srv, cfg.Key(), bs)
	})
}

// TestServerRemoveSendsDetectMultAdminDown: Remove keeps telling the peer
// AdminDown until it has sent Detect Mult packets (RFC 5880 section 6.8.16,
// as Shutdown does), then releases the session.
func TestServerRemoveSendsDetectMultAdminDown(t *testing.T) {
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	peerPort := uint16(peer.LocalAddr().(*net.UDPAddr).Port)
	srv := NewServer(WithListenPorts(freeUDPPort(t), freeUDPPort(t)), WithPeerPorts(peerPort, peerPort))
	cfg := SessionConfig{Peer: netip.MustParseAddr("127.0.0.2"), Local: netip.MustParseAddr("127.0.0.1"),
		DesiredMinTx: 50 * time.Millisecond, DetectMultiplier: 3}
	if err := srv.Add(cfg); err != nil {
		t.Fatal(err)
	}
	runServer(t, srv)
	st, _ := srv.Stats(cfg.Key())
	packets := make(chan Packet, 64)
	go func() {
		buf := make([]byte, 64)
		for {
			n, err := peer.Read(buf)
			if err != nil {
				close(packets)
				return
			}
			var p Packet
			if p.Unmarshal(buf[:n]) == nil && p.MyDiscriminator == st.LocalDiscriminator {
				packets <- p
			}
		}
	}()
	next := func(what string) Packet {
		t.Helper()
		select {
		case p := <-packets:
			return p
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s within 10 s", what)
		}
		return Packet{}
	}
	if p := next("first packet"); p.State != StateDown {
		t.Fatalf("first packet %+v, want Down", p)
	}
	if err := srv.Remove(cfg.Key()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Add(cfg); err != nil {
		t.Fatalf("Add right after Remove: %v", err)
	}
	adminDown := 0
	for adminDown < int(cfg.DetectMultiplier) {
		if p := next("AdminDown packet"); p.State == StateAdminDown && p.Diag == DiagAdministrativelyDown {
			adminDown++
		}
	}
	waitFor(t, 10*time.Second, "removed session released", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		_, taken := srv.byDisc[st.LocalDiscriminator]
		return len(srv.retiring) == 0 && !taken
	})
}
