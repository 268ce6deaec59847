package bfd

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// freeUDPPort returns a UDP port that was free on loopback a moment ago.
func freeUDPPort(t *testing.T) uint16 {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return uint16(c.LocalAddr().(*net.UDPAddr).Port)
}

type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func (l *eventLog) add(e Event) { l.mu.Lock(); l.evs = append(l.evs, e); l.mu.Unlock() }

// waitFor polls cond every 5 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type loopPair struct {
	a, b         *Server
	keyA, keyB   Key // keyA: A's session (peer B); keyB: B's session
	evA, evB     *eventLog
	stopA, stopB context.CancelFunc
	doneA, doneB chan error
	addrB        netip.Addr
	portA        uint16
}

// startLoopPair runs two servers on loopback, talking to each other on
// distinct ports, with 50 ms x 3 timers.
func startLoopPair(t *testing.T, addrA, addrB netip.Addr, multihop bool) *loopPair {
	t.Helper()
	pa, pb := freeUDPPort(t), freeUDPPort(t)
	lp := &loopPair{evA: &eventLog{}, evB: &eventLog{}, addrB: addrB, portA: pa}
	lp.a = NewServer(WithListenPorts(pa, pa), WithPeerPorts(pb, pb), WithEventHandler(lp.evA.add))
	lp.b = NewServer(WithListenPorts(pb, pb), WithPeerPorts(pa, pa), WithEventHandler(lp.evB.add))
	cfg := SessionConfig{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMultiplier: 3, Multihop: multihop}
	ca, cb := cfg, cfg
	ca.Peer, ca.Local = addrB, addrA
	cb.Peer, cb.Local = addrA, addrB
	if err := lp.a.Add(ca); err != nil {
		t.Fatal(err)
	}
	if err := lp.b.Add(cb); err != nil {
		t.Fatal(err)
	}
	lp.keyA, lp.keyB = ca.Key(), cb.Key()
	lp.stopA, lp.doneA = runServer(t, lp.a)
	lp.stopB, lp.doneB = runServer(t, lp.b)
	return lp
}

func runServer(t *testing.T, s *Server) (context.CancelFunc, chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel, done
}

func stateOf(s *Server, k Key) State {
	st, ok := s.Stats(k)
	if !ok {
		return StateAdminDown
	}
	return st.State
}

func bothUp(lp *loopPair) func() bool {
	return func() bool { return stateOf(lp.a, lp.keyA) == StateUp && stateOf(lp.b, lp.keyB) == StateUp }
}

var loopbackFamilies = []struct {
	name     string
	a, b     netip.Addr
	multihop bool
}{
	{"IPv4", netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), false},
	{"IPv6", netip.IPv6Loopback(), netip.IPv6Loopback(), false},
	{"IPv4 multihop", netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), true},
	{"IPv6 multihop", netip.IPv6Loopback(), netip.IPv6Loopback(), true},
}

func TestServerLoopbackUpAndAbruptLoss(t *testing.T) {
	for _, fam := range loopbackFamilies {
		t.Run(fam.name, func(t *testing.T) {
			lp := startLoopPair(t, fam.a, fam.b, fam.multihop)
			waitFor(t, 5*time.Second, "both sessions Up", bothUp(lp))
			// Up comes before the Poll sequence that moves the timers from
			// the slow rate to 50 ms x 3 ends (RFC 5880 section 6.8.3).
			waitFor(t, 5*time.Second, "B's poll sequence to end", func() bool {
				st, _ := lp.b.Stats(lp.keyB)
				return !st.Polling
			})
			st, _ := lp.b.Stats(lp.keyB)
			if st.DetectionTime != 150*time.Millisecond || st.RemoteDiscriminator == 0 || st.SocketError != "" {
				t.Fatalf("B stats %+v", st)
			}
			lp.stopA() // abrupt: no AdminDown
			<-lp.doneA
			lost := time.Now()
			waitFor(t, 2*time.Second, "B Down", func() bool { return stateOf(lp.b, lp.keyB) == StateDown })
			t.Logf("detected in %v (detection time 150ms)", time.Since(lost))
			ev := waitForEvent(t, lp.evB, StateDown)
			if ev.New != StateDown || ev.Diag != DiagControlDetectExpired || ev.PeerAdminDown {
				t.Fatalf("B event %+v, want Down by detection expiry", ev)
			}
		})
	}
}

// waitForEvent waits (bounded) until the last event l received is a
// transition to state, and returns it: the handler runs after the session's
// state changed, so Stats can show the state before the event arrives.
func waitForEvent(t *testing.T, l *eventLog, state State) Event {
	t.Helper()
	waitFor(t, 2*time.Second, "the event to "+state.String(), func() bool { return lastEvent(l).New == state })
	return lastEvent(l)
}

func lastEvent(l *eventLog) Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.evs) == 0 {
		return Event{}
	}
	return l.evs[len(l.evs)-1]
}

func TestServerShutdownSignalsAdminDown(t *testing.T) {
	lp := startLoopPair(t, loopbackFamilies[0].a, loopbackFamilies[0].b, false)
	waitFor(t, 5*time.Second, "both sessions Up", bothUp(lp))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := lp.a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Second, "B Down", func() bool { return stateOf(lp.b, lp.keyB) == StateDown })
	ev := waitForEvent(t, lp.evB, StateDown)
	if ev.Old != StateUp || ev.New != StateDown || ev.Diag != DiagNeighborSignaledDown || !ev.PeerAdminDown {
		t.Fatalf("B event %+v, want Down with PeerAdminDown", ev)
	}
	if ev := lastEvent(lp.evA); ev.New != StateAdminDown || ev.Diag != DiagAdministrativelyDown {
		t.Fatalf("A event %+v", ev)
	}
	// Shutdown waits for Run's end; the test's goroutine reports it just
	// after, so give it a bounded moment rather than none.
	select {
	case <-lp.doneA:
	case <-time.After(2 * time.Second):
		t.Fatal("Run still running 2s after Shutdown returned")
	}
}

func TestServerRemoveAndUpdate(t *testing.T) {
	lp := startLoopPair(t, loopbackFamilies[0].a, loopbackFamilies[0].b, false)
	waitFor(t, 5*time.Second, "both sessions Up", bothUp(lp))
	cfg := SessionConfig{Peer: lp.keyA.Peer, Local: loopbackFamilies[0].a, DesiredMinTx: 80 * time.Millisecond,
		RequiredMinRx: 120 * time.Millisecond, DetectMultiplier: 4}
	if err := lp.a.Update(cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "poll completed on both sides", func() bool {
		sa, _ := lp.a.Stats(lp.keyA)
		sb, _ := lp.b.Stats(lp.keyB)
		return !sa.Polling && sb.TxInterval == 120*time.Millisecond && sb.DetectionTime == 4*80*time.Millisecond
	})
	if err := lp.a.Add(cfg); !errors.Is(err, ErrExists) {
		t.Fatalf("second Add: %v", err)
	}
	if err := lp.a.Remove(lp.keyA); err != nil {
		t.Fatal(err)
	}
	if err := lp.a.Remove(lp.keyA); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Remove: %v", err)
	}
	waitFor(t, time.Second, "B Down", func() bool { return stateOf(lp.b, lp.keyB) == StateDown })
	if ev := lastEvent(lp.evB); !ev.PeerAdminDown {
		t.Fatalf("B event %+v, want PeerAdminDown", ev)
	}
}

// TestServerDiscards checks the receive-path checks that need a socket:
// malformed packets, unknown discriminators and a TTL other than 255.
func TestServerDiscards(t *testing.T) {
	port := freeUDPPort(t)
	srv := NewServer(WithListenPorts(port, 0), WithPeerPorts(freeUDPPort(t), 0))
	peer := netip.MustParseAddr("127.0.0.3")
	if err := srv.Add(SessionConfig{Peer: peer, Local: netip.MustParseAddr("127.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	runServer(t, srv)
	waitFor(t, 2*time.Second, "listener", func() bool { st, _ := srv.Stats(peer4Key(peer)); return st.PacketsOut > 0 })

	send := func(ttl int, b []byte) {
		c, err := net.DialUDP("udp4", &net.UDPAddr{IP: peer.AsSlice()}, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(port)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rc, _ := c.SyscallConn()
		_ = rc.Control(func(fd uintptr) { _ = setSockopts(int(fd), false, "", false) })
		if ttl != 255 {
			_ = rc.Control(func(fd uintptr) { setTTL(t, fd, ttl) })
		}
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	down := Packet{Version: 1, State: StateDown, DetectMult: 3, MyDiscriminator: 99, DesiredMinTxUsec: 1e6, RequiredMinRxUsec: 1e6}
	unknown := down
	unknown.YourDiscriminator = 12345
	send(255, []byte{1, 2, 3})
	send(255, marshal(t, unknown))
	send(64, marshal(t, down))
	waitFor(t, 2*time.Second, "discards counted", func() bool {
		d := srv.Discards()
		st, _ := srv.Stats(peer4Key(peer))
		return d[DiscardBadLength] == 1 && d[DiscardNoSession] == 1 && st.Discards[DiscardBadTTL] == 1
	})
	send(255, marshal(t, down))
	waitFor(t, 2*time.Second, "accepted packet", func() bool { return stateOf(srv, peer4Key(peer)) == StateInit })
}

func peer4Key(a netip.Addr) Key { return Key{Peer: a} }

// countingSender is a transmit socket that counts the writes.
type countingSender struct{ writes int }

func (c *countingSender) WriteToUDPAddrPort(p []byte, _ netip.AddrPort) (int, error) {
	c.writes++
	return len(p), nil
}

func (c *countingSender) Close() error { return nil }

// TestServerReceivePathDoesNotAllocate: receiving a Poll and writing its
// Final (RFC 5880 section 6.5) does not allocate.
func TestServerReceivePathDoesNotAllocate(t *testing.T) {
	srv := NewServer()
	cfg := SessionConfig{Peer: netip.MustParseAddr("192.0.2.7")}
	if err := srv.Add(cfg); err != nil {
		t.Fatal(err)
	}
	conn := &countingSender{}
	srv.sessions[cfg.Key()].conn = conn
	st, _ := srv.Stats(cfg.Key())
	up := Packet{Version: 1, State: StateUp, Poll: true, DetectMult: 3, MyDiscriminator: 5,
		YourDiscriminator: st.LocalDiscriminator, DesiredMinTxUsec: 300000, RequiredMinRxUsec: 300000}
	b := marshal(t, up)
	var p Packet
	anc := ancillary{ttl: 255, ifindex: 3}
	out := newOutbox(4)
	allocs := testing.AllocsPerRun(1000, func() {
		srv.receive(out, &p, b, cfg.Peer, anc, listenerKind{})
	})
	if allocs != 0 {
		t.Fatalf("receive path allocates %v times per packet", allocs)
	}
	if st, _ := srv.Stats(cfg.Key()); st.PacketsIn < 1000 || conn.writes < 1000 {
		t.Fatalf("packets not accepted or Finals not written (%d writes): %+v", conn.writes, st)
	}
}

func TestParseAncillary(t *testing.T) {
	build := func(level, typ int32, data []byte) []byte {
		b := make([]byte, unix.CmsgSpace(len(data)))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = level, typ
		h.SetLen(unix.CmsgLen(len(data)))
		copy(b[unix.CmsgLen(0):], data)
		return b
	}
	le := func(v uint32, n int) []byte {
		b := make([]byte, n)
		binary.NativeEndian.PutUint32(b, v)
		return b
	}
	pkt6 := make([]byte, unix.SizeofInet6Pktinfo)
	binary.NativeEndian.PutUint32(pkt6[16:], 9)
	tests := []struct {
		name string
		oob  []byte
		want ancillary
	}{
		{"empty", nil, ancillary{ttl: -1}},
		{"v4 ttl+pktinfo", append(build(unix.IPPROTO_IP, unix.IP_TTL, le(255, 4)), build(unix.IPPROTO_IP, unix.IP_PKTINFO, le(7, unix.SizeofInet4Pktinfo))...), ancillary{ttl: 255, ifindex: 7}},
		{"v6 hoplimit+pktinfo", append(build(unix.IPPROTO_IPV6, unix.IPV6_HOPLIMIT, le(64, 4)), build(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, pkt6)...), ancillary{ttl: 64, ifindex: 9}},
		{"truncated", build(unix.IPPROTO_IP, unix.IP_TTL, le(255, 4))[:unix.SizeofCmsghdr+2], ancillary{ttl: -1}},
	}
	for _, tt := range tests {
		if got := parseAncillary(tt.oob); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func BenchmarkServerReceive(b *testing.B) {
	srv := NewServer()
	cfg := SessionConfig{Peer: netip.MustParseAddr("192.0.2.7")}
	_ = srv.Add(cfg)
	st, _ := srv.Stats(cfg.Key())
	buf := make([]byte, PacketLen)
	up := Packet{Version: 1, State: StateUp, DetectMult: 3, MyDiscriminator: 5,
		YourDiscriminator: st.LocalDiscriminator, DesiredMinTxUsec: 300000, RequiredMinRxUsec: 300000}
	_, _ = up.MarshalTo(buf)
	var p Packet
	out := newOutbox(4)
	b.ReportAllocs()
	for b.Loop() {
		srv.receive(out, &p, buf, cfg.Peer, ancillary{ttl: 255}, listenerKind{})
	}
}

func setTTL(t *testing.T, fd uintptr, ttl int) {
	t.Helper()
	if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, ttl); err != nil {
		t.Fatal(err)
	}
}
