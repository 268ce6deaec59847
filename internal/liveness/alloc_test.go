package liveness

import (
	"net/netip"
	"testing"
	"time"
)

// steady is a Prober on the fake network in its steady state; pass
// probes every address once and hands it the replies, allocating nothing
// of its own.
type steady struct {
	s          *sim
	cfg        Config
	buf4, buf6 []byte
	out        outbox
}

func newSteady(tb testing.TB, addrs ...netip.Addr) *steady {
	st := &steady{s: newSim(tb), cfg: Config{Interval: 100 * time.Millisecond, Multiplier: 3},
		buf4: ipv4Packet(a4, us, make([]byte, probeLen)), buf6: make([]byte, probeLen)}
	st.s.p.Set(targets(st.cfg, addrs...))
	st.s.advance(time.Second) // every address probed, alive
	return st
}

func (st *steady) pass() {
	s := st.s
	s.clock.Advance(st.cfg.Interval)
	now := s.clock.Now()
	s.p.mu.Lock()
	s.p.collect(now, &st.out)
	s.p.mu.Unlock()
	s.p.sent(&st.out)
	for _, pr := range st.out.probes[:st.out.n] {
		if pr.ep.sa.v6 {
			copy(st.buf6, pr.pkt[:pr.n])
			st.buf6[0] = TypeEchoReply6
			s.p.receive(now, &s.echo, st.buf6, len(st.buf6), true, pr.ep.addr)
			continue
		}
		msg := st.buf4[ipv4MinHeader:] // from a4
		copy(msg, pr.pkt[:pr.n])
		msg[0] = TypeEchoReply4
		setICMPChecksum(msg)
		s.p.receive(now, &s.echo, st.buf4, len(st.buf4), false, netip.Addr{})
	}
}

// TestProberAllocatesNothingPerProbe pins the steady state of the engine:
// sending probes (collect, sent) and receiving valid replies (receive)
// allocate nothing. The sockets' part is pinned by
// TestIntegrationAllocatesNothing.
func TestProberAllocatesNothingPerProbe(t *testing.T) {
	st := newSteady(t, a4, c6)
	valid := st.s.p.Stats().RepliesValid
	const runs = 200
	if allocs := testing.AllocsPerRun(runs, st.pass); allocs != 0 {
		t.Errorf("%v allocations per pass of 2 probes and 2 replies, want 0", allocs)
	}
	if got := st.s.p.Stats().RepliesValid - valid; got != 2*(runs+1) {
		t.Errorf("%d valid replies in %d passes, want 2 per pass: the loop measured something else", got, runs+1)
	}
	if s := st.s.p.Stats(); s.Ignored.Total() != 0 {
		t.Errorf("ignored: %+v", s.Ignored)
	}
}

// BenchmarkProbeAndReply: the engine's time for one probe and its reply.
func BenchmarkProbeAndReply(b *testing.B) {
	st := newSteady(b, a4)
	b.ReportAllocs()
	for b.Loop() {
		st.pass()
	}
	if st.s.p.Stats().Ignored.Total() != 0 {
		b.Fatal("replies ignored")
	}
}
