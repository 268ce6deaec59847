package bfd

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const peerDisc = 0xabcdef01

func testConfig() SessionConfig {
	return SessionConfig{Peer: netip.MustParseAddr("192.0.2.1"), Interface: "eth0",
		DesiredMinTx: 300 * time.Millisecond, RequiredMinRx: 300 * time.Millisecond, DetectMultiplier: 3}
}

func newTestSession(cfg SessionConfig) *Session {
	return NewSession(cfg, 0x11, rand.New(rand.NewPCG(1, 2)), t0)
}

// peerPacket is what a peer with 300 ms x 3 timers sends.
func peerPacket(st State, your uint32) *Packet {
	return &Packet{Version: 1, State: st, DetectMult: 3, Length: 24, MyDiscriminator: peerDisc,
		YourDiscriminator: your, DesiredMinTxUsec: 300000, RequiredMinRxUsec: 300000}
}

// bringUp drives s to Up with the peer's packets.
func bringUp(t *testing.T, s *Session, now time.Time) {
	t.Helper()
	s.Receive(now, peerPacket(StateDown, 0))
	s.Receive(now, peerPacket(StateUp, s.localDisc))
	if s.State() != StateUp {
		t.Fatalf("state %v, want Up", s.State())
	}
}

func TestStateTable(t *testing.T) {
	tests := []struct {
		from, rx      State
		want          State
		changed       bool
		diag          Diag
		peerAdminDown bool
	}{
		{StateDown, StateAdminDown, StateDown, false, DiagNone, false},
		{StateDown, StateDown, StateInit, true, DiagNone, false},
		{StateDown, StateInit, StateUp, true, DiagNone, false},
		{StateDown, StateUp, StateDown, false, DiagNone, false},
		{StateInit, StateAdminDown, StateDown, true, DiagNeighborSignaledDown, true},
		{StateInit, StateDown, StateInit, false, DiagNone, false},
		{StateInit, StateInit, StateUp, true, DiagNone, false},
		{StateInit, StateUp, StateUp, true, DiagNone, false},
		{StateUp, StateAdminDown, StateDown, true, DiagNeighborSignaledDown, true},
		{StateUp, StateDown, StateDown, true, DiagNeighborSignaledDown, false},
		{StateUp, StateInit, StateUp, false, DiagNone, false},
		{StateUp, StateUp, StateUp, false, DiagNone, false},
		{StateAdminDown, StateDown, StateAdminDown, false, DiagAdministrativelyDown, false},
		{StateAdminDown, StateUp, StateAdminDown, false, DiagAdministrativelyDown, false},
	}
	for _, tt := range tests {
		t.Run(tt.from.String()+"+"+tt.rx.String(), func(t *testing.T) {
			s := newTestSession(testConfig())
			switch tt.from {
			case StateInit:
				s.Receive(t0, peerPacket(StateDown, 0))
			case StateUp:
				bringUp(t, s, t0)
			case StateAdminDown:
				s.SetAdminDown(t0)
			}
			if s.State() != tt.from {
				t.Fatalf("setup: state %v, want %v", s.State(), tt.from)
			}
			tr, changed := s.Receive(t0, peerPacket(tt.rx, s.localDisc))
			if s.State() != tt.want || changed != tt.changed {
				t.Fatalf("got %v (changed %v), want %v (changed %v)", s.State(), changed, tt.want, tt.changed)
			}
			if changed && (tr.Old != tt.from || tr.New != tt.want || tr.Diag != tt.diag || tr.PeerAdminDown != tt.peerAdminDown) {
				t.Fatalf("transition %+v, want %v->%v diag %v peerAdminDown %v", tr, tt.from, tt.want, tt.diag, tt.peerAdminDown)
			}
			if s.Stats().LocalDiag != tt.diag {
				t.Fatalf("local diag %v, want %v", s.Stats().LocalDiag, tt.diag)
			}
		})
	}
}

// exchange delivers every packet a sends at now to b and returns how many.
func exchange(t *testing.T, now time.Time, a, b *Session) int {
	t.Helper()
	var p Packet
	n := 0
	for a.Transmit(now, &p) {
		if p.Poll && p.Final {
			t.Fatal("packet with both P and F")
		}
		var q Packet
		if err := q.Unmarshal(marshal(t, p)); err != nil {
			t.Fatalf("own packet discarded: %v", err)
		}
		b.Receive(now, &q)
		n++
	}
	return n
}

func TestTwoSessionsHandshakeAndNegotiate(t *testing.T) {
	ca, cb := testConfig(), testConfig()
	cb.DesiredMinTx, cb.RequiredMinRx, cb.DetectMultiplier = 100*time.Millisecond, 500*time.Millisecond, 5
	a := NewSession(ca, 1, rand.New(rand.NewPCG(1, 1)), t0)
	b := NewSession(cb, 2, rand.New(rand.NewPCG(2, 2)), t0)
	now := t0
	for i := 0; i < 50 && (a.State() != StateUp || b.State() != StateUp || a.Stats().Polling || b.Stats().Polling); i++ {
		exchange(t, now, a, b)
		exchange(t, now, b, a)
		now = now.Add(50 * time.Millisecond)
	}
	sa, sb := a.Stats(), b.Stats()
	if sa.State != StateUp || sb.State != StateUp || sa.Polling || sb.Polling {
		t.Fatalf("not settled: a %+v b %+v", sa, sb)
	}
	tests := []struct {
		name      string
		got, want time.Duration
	}{
		// 6.8.2: max(own DesiredMinTx, peer RequiredMinRx).
		{"a tx", sa.TxInterval, 500 * time.Millisecond},
		{"b tx", sb.TxInterval, 300 * time.Millisecond},
		// 6.8.4: peer DetectMult x max(own RequiredMinRx, peer DesiredMinTx).
		{"a detect", sa.DetectionTime, 5 * 300 * time.Millisecond},
		{"b detect", sb.DetectionTime, 3 * 500 * time.Millisecond},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestSlowTransmitWhileNotUp(t *testing.T) {
	s := newTestSession(testConfig())
	var p Packet
	if !s.Transmit(t0, &p) || p.State != StateDown || p.DesiredMinTxUsec != 1000000 || p.RequiredMinRxUsec != 300000 {
		t.Fatalf("first packet %+v, want Down with 1 s desired tx", p)
	}
	if got := s.Stats().TxInterval; got != time.Second {
		t.Fatalf("tx interval %v while Down, want 1s (RFC 5880 6.8.3)", got)
	}
	if s.Transmit(t0.Add(749*time.Millisecond), &p) {
		t.Fatal("transmitted before 75% of the 1 s interval")
	}
	if !s.Transmit(t0.Add(time.Second), &p) {
		t.Fatal("no transmission after the full interval")
	}
}

func TestDetectionExpiry(t *testing.T) {
	s := newTestSession(testConfig())
	bringUp(t, s, t0)
	detect := s.Stats().DetectionTime // 3 x 300 ms
	if detect != 900*time.Millisecond {
		t.Fatalf("detection time %v, want 900ms", detect)
	}
	last := t0.Add(time.Second)
	s.Receive(last, peerPacket(StateUp, s.localDisc))
	if _, changed := s.Expire(last.Add(detect - time.Nanosecond)); changed || s.State() != StateUp {
		t.Fatal("went down before the detection time")
	}
	if d := s.Deadline(); d.After(last.Add(detect)) {
		t.Fatalf("deadline %v later than detection expiry", d.Sub(last))
	}
	tr, changed := s.Expire(last.Add(detect))
	if !changed || tr.New != StateDown || tr.Diag != DiagControlDetectExpired || tr.PeerAdminDown {
		t.Fatalf("transition %+v changed %v, want Down with diag 1", tr, changed)
	}
	st := s.Stats()
	if st.RemoteDiscriminator != 0 || st.DownTransitions != 1 || st.UpTransitions != 1 {
		t.Fatalf("after expiry: %+v", st)
	}
	var p Packet
	if !s.Transmit(last.Add(detect), &p) || p.State != StateDown || p.Diag != DiagControlDetectExpired || p.YourDiscriminator != 0 {
		t.Fatalf("packet after expiry %+v", p)
	}
}

func TestPollFinal(t *testing.T) {
	s := newTestSession(testConfig())
	bringUp(t, s, t0)
	now := t0.Add(time.Second)
	s.Receive(now, finalPacket(s)) // complete the poll started by going Up
	cfg := testConfig()
	cfg.DesiredMinTx, cfg.RequiredMinRx = time.Second, 100*time.Millisecond
	s.Update(now, cfg)
	st := s.Stats()
	// Slower tx and shorter detection must wait for the Final (6.8.3).
	if !st.Polling || st.TxInterval != 300*time.Millisecond || st.DetectionTime != 900*time.Millisecond {
		t.Fatalf("during poll: %+v", st)
	}
	var p Packet
	if !s.Transmit(now.Add(time.Second), &p) || !p.Poll || p.Final || p.DesiredMinTxUsec != 1000000 || p.RequiredMinRxUsec != 100000 {
		t.Fatalf("periodic packet during poll %+v", p)
	}
	s.Receive(now.Add(time.Second), finalPacket(s))
	st = s.Stats()
	// Now 3 x max(own 100 ms, peer's 100 ms).
	if st.Polling || st.TxInterval != time.Second || st.DetectionTime != 300*time.Millisecond {
		t.Fatalf("after final: %+v", st)
	}
	if !s.Transmit(now.Add(3*time.Second), &p) || p.Poll {
		t.Fatalf("packet after poll %+v", p)
	}
}

func finalPacket(s *Session) *Packet {
	p := peerPacket(StateUp, s.localDisc)
	p.Final = true
	p.DesiredMinTxUsec = 100000
	return p
}

func TestPollIsAnsweredAtOnce(t *testing.T) {
	s := newTestSession(testConfig())
	bringUp(t, s, t0)
	var p Packet
	for s.Transmit(t0, &p) { // drain the packets due at t0
	}
	poll := peerPacket(StateUp, s.localDisc)
	poll.Poll = true
	s.Receive(t0.Add(time.Millisecond), poll)
	if !s.Deadline().IsZero() {
		t.Fatal("deadline not immediate with a Final due")
	}
	if !s.Transmit(t0.Add(time.Millisecond), &p) || !p.Final || p.Poll {
		t.Fatalf("answer %+v, want F without P", p)
	}
	if s.Transmit(t0.Add(2*time.Millisecond), &p) {
		t.Fatalf("extra packet %+v", p)
	}
}

func TestFasterTimersApplyAtOnce(t *testing.T) {
	s := newTestSession(testConfig())
	bringUp(t, s, t0)
	cfg := testConfig()
	cfg.DesiredMinTx, cfg.RequiredMinRx = 100*time.Millisecond, time.Second
	s.Update(t0, cfg)
	st := s.Stats()
	// Faster tx (peer asks 300 ms) and longer detection are safe at once.
	if !st.Polling || st.TxInterval != 300*time.Millisecond || st.DetectionTime != 3*time.Second {
		t.Fatalf("stats %+v, want tx 300ms and detection 3s during the poll", st)
	}
	s.Receive(t0, peerPacket(StateUp, s.localDisc))
	if _, changed := s.Expire(t0.Add(2 * time.Second)); changed {
		t.Fatal("detection timer not armed with the longer detection time")
	}
}

func TestJitterBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const interval = time.Second
	for _, mult := range []uint8{1, 3} {
		hi := interval
		if mult == 1 {
			hi = interval * 90 / 100
		}
		lo := interval * 75 / 100
		minSeen, maxSeen := interval, time.Duration(0)
		for range 10000 {
			d := jittered(rng, interval, mult)
			if d < lo || d > hi {
				t.Fatalf("mult %d: %v outside [%v, %v]", mult, d, lo, hi)
			}
			minSeen, maxSeen = min(minSeen, d), max(maxSeen, d)
		}
		if minSeen > lo+interval/100 || maxSeen < hi-interval/100 {
			t.Fatalf("mult %d: jitter does not span its range: [%v, %v]", mult, minSeen, maxSeen)
		}
	}
}

func TestAdminDown(t *testing.T) {
	s := newTestSession(testConfig())
	bringUp(t, s, t0)
	tr, changed := s.SetAdminDown(t0)
	if !changed || tr.New != StateAdminDown || tr.Diag != DiagAdministrativelyDown || tr.PeerAdminDown {
		t.Fatalf("transition %+v", tr)
	}
	var p Packet
	if !s.Transmit(t0, &p) || p.State != StateAdminDown || p.Diag != DiagAdministrativelyDown {
		t.Fatalf("packet %+v, want AdminDown at once", p)
	}
	s.Receive(t0, peerPacket(StateUp, s.localDisc))
	if s.State() != StateAdminDown || s.Stats().Discards[DiscardLocalAdminDown] != 1 {
		t.Fatalf("state %v discards %v", s.State(), s.Stats().Discards)
	}
	if _, changed := s.Expire(t0.Add(time.Hour)); changed {
		t.Fatal("expiry changed an AdminDown session")
	}
	if tr, changed := s.Enable(t0); !changed || tr.New != StateDown {
		t.Fatalf("enable: %+v", tr)
	}
}

func TestNoPeriodicTransmitWhenPeerRequiresZeroRx(t *testing.T) {
	s := newTestSession(testConfig())
	var p Packet
	s.Transmit(t0, &p)
	quiet := peerPacket(StateDown, 0)
	quiet.RequiredMinRxUsec = 0
	s.Receive(t0, quiet) // Down -> Init: a state change is still sent once
	if !s.Transmit(t0, &p) {
		t.Fatal("state change not sent")
	}
	for i := 1; i <= 5; i++ {
		if s.Transmit(t0.Add(time.Duration(i)*time.Second), &p) {
			t.Fatalf("periodic packet %+v with remote RequiredMinRx 0", p)
		}
	}
}

func TestSessionHotPathDoesNotAllocate(t *testing.T) {
	s := newTestSession(testConfig())
	bringUp(t, s, t0)
	in := peerPacket(StateUp, s.localDisc)
	var out Packet
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(100 * time.Millisecond)
		s.Receive(now, in)
		s.Expire(now)
		for s.Transmit(now, &out) {
		}
	})
	if allocs != 0 {
		t.Fatalf("session allocates %v times per run", allocs)
	}
}
