package liveness

import (
	"net/netip"
	"sort"
	"syscall"
	"testing"
	"time"
)

// sim runs a Prober without sockets on a fake clock: probes go to a fake
// network whose hosts answer after rtt unless down.
type sim struct {
	t       testing.TB
	clock   *fakeClock
	p       *Prober
	rtt     time.Duration
	down    map[netip.Addr]bool
	sendErr map[netip.Addr]syscall.Errno
	flight  []flying
	sent    []sentRec
	changes []Change
	out     outbox
	echo    Echo
}

type flying struct {
	at  time.Time
	v6  bool
	src netip.Addr
	b   []byte // as the socket delivers it
}

type sentRec struct {
	at   time.Time
	addr netip.Addr
	seq  uint16
	msg  []byte
}

func newSim(t testing.TB) *sim {
	c := &fakeClock{t: time.Unix(1_000_000, 0)}
	var seed [32]byte
	seed[0] = 42
	return &sim{t: t, clock: c, p: newProber(c.Now, seed), rtt: 300 * time.Microsecond,
		down: map[netip.Addr]bool{}, sendErr: map[netip.Addr]syscall.Errno{}}
}

// reply builds what the socket of src's family would deliver for the
// request msg answered by src.
func (s *sim) reply(src netip.Addr, msg []byte) flying {
	b := append([]byte{}, msg...)
	toReply(b, src.Is6())
	if src.Is4() {
		b = ipv4Packet(src, us, b)
	}
	return flying{v6: src.Is6(), src: src, b: b}
}

// deliver hands b to the prober as the loop would.
func (s *sim) deliver(f flying) {
	from := netip.IPv6Unspecified()
	if f.v6 {
		from = f.src
	}
	s.p.receive(s.clock.Now(), &s.echo, f.b, len(f.b), f.v6, from)
}

// advance runs the prober for d in steps of step (default 100 µs).
func (s *sim) advance(d time.Duration) {
	const step = 100 * time.Microsecond
	end := s.clock.Now().Add(d)
	for s.clock.Now().Before(end) {
		s.clock.Advance(step)
		now := s.clock.Now()
		rest := s.flight[:0]
		for _, f := range s.flight {
			if f.at.After(now) {
				rest = append(rest, f)
				continue
			}
			s.deliver(f)
		}
		s.flight = rest
		s.p.mu.Lock()
		s.p.collect(now, &s.out)
		s.p.mu.Unlock()
		for i := range s.out.probes[:s.out.n] {
			pr := &s.out.probes[i]
			if pr.err = s.sendErr[pr.ep.addr]; pr.err != 0 {
				continue
			}
			msg := append([]byte{}, pr.pkt[:pr.n]...)
			seq := uint16(msg[6])<<8 | uint16(msg[7])
			s.sent = append(s.sent, sentRec{at: now, addr: pr.ep.addr, seq: seq, msg: msg})
			if !s.down[pr.ep.addr] {
				f := s.reply(pr.ep.addr, msg)
				f.at = now.Add(s.rtt)
				s.flight = append(s.flight, f)
			}
		}
		s.p.sent(&s.out)
		s.p.mu.Lock()
		s.changes = append(s.changes, s.p.pending...)
		s.p.pending = nil
		s.p.mu.Unlock()
	}
}

// takeChanges returns the changes since the last call.
func (s *sim) takeChanges() []Change {
	cs := s.changes
	s.changes = nil
	return cs
}

func (s *sim) state(a netip.Addr) State {
	for _, st := range s.p.States() {
		if st.Addr == a {
			return st
		}
	}
	s.t.Fatalf("%v not probed", a)
	return State{}
}

// lastSent returns the last probe sent to a.
func (s *sim) lastSent(a netip.Addr) sentRec {
	for i := len(s.sent) - 1; i >= 0; i-- {
		if s.sent[i].addr == a {
			return s.sent[i]
		}
	}
	s.t.Fatalf("nothing sent to %v", a)
	return sentRec{}
}

// sendTimes returns the times probes went to a.
func (s *sim) sendTimes(a netip.Addr) []time.Time {
	var ts []time.Time
	for _, r := range s.sent {
		if r.addr == a {
			ts = append(ts, r.at)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	return ts
}

func targets(cfg Config, addrs ...netip.Addr) []Target {
	ts := make([]Target, len(addrs))
	for i, a := range addrs {
		ts[i] = Target{Addr: a, Config: cfg}
	}
	return ts
}
