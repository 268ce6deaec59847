package liveness

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"time"
)

const (
	// payloadLen is the data of a probe: a random token the reply must
	// echo, so that a reply can be forged only by one who saw the probe.
	payloadLen = 8
	probeLen   = echoHeaderLen + payloadLen
	outboxSize = 64
)

// probe is one echo request ready to send.
type probe struct {
	ep  *endpoint // only its immutable fields are read outside Prober.mu
	n   int
	pkt [probeLen]byte
	err syscall.Errno
}

// outbox holds the probes of one pass, sent after Prober.mu is released.
type outbox struct {
	probes [outboxSize]probe
	n      int
}

// collect ticks every endpoint due by now and puts its next probe in out,
// until out is full. It returns when the next probe is
// due (zero: nothing to probe). Called with p.mu held.
func (p *Prober) collect(now time.Time, out *outbox) time.Time {
	out.n = 0
	for {
		e := p.sched.first()
		if e == nil {
			return time.Time{}
		}
		if e.next.After(now) || out.n == len(out.probes) {
			return e.next
		}
		if c, changed := e.m.tick(now, e.cfg); changed {
			p.emit(e, c)
		}
		p.prepare(now, e, &out.probes[out.n])
		out.n++
		p.advance(e, now)
		p.sched.fix(e)
	}
}

// prepare takes the next sequence number for a probe of e and encodes it.
func (p *Prober) prepare(now time.Time, e *endpoint, pr *probe) {
	p.seq++
	token := p.rng.Uint64()
	p.ring[p.seq] = sentProbe{at: now.Sub(p.epoch), token: token, slot: e.slot, gen: e.gen}
	var data [payloadLen]byte
	binary.BigEndian.PutUint64(data[:], token)
	pr.ep, pr.err = e, 0
	pr.n = len(AppendEchoRequest(pr.pkt[:0], e.sa.v6, p.id, p.seq, data[:]))
}

// sent records the outcome of sending out's probes: counters, and each
// endpoint's send error, logged when it changes. Called without p.mu.
func (p *Prober) sent(out *outbox) {
	failed := false
	for i := range out.probes[:out.n] {
		if out.probes[i].err == 0 {
			p.stats.sent.Add(1)
		} else {
			p.stats.sendErrors.Add(1)
			failed = true
		}
	}
	if !failed && p.failing.Load() == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range out.probes[:out.n] {
		pr := &out.probes[i]
		e := pr.ep
		if p.byAddr[e.addr] != e || e.sendErr == pr.err {
			continue // forgotten meanwhile, or no news
		}
		switch {
		case e.sendErr == 0:
			p.failing.Add(1)
			p.opts.logger.Warn("liveness: cannot send probes (each is a miss)", "addr", e.addr, "err", pr.err)
		case pr.err == 0:
			p.failing.Add(-1)
			p.opts.logger.Info("liveness: probes sent again", "addr", e.addr)
		}
		e.sendErr = pr.err
	}
}

// receive decodes and handles one datagram b[:n] (n < 0: truncated) read
// at now from a raw socket of the family v6; from6 is the source address
// the socket gave (IPv6 only; IPv4 has it in its header). Called without
// p.mu; it allocates nothing.
func (p *Prober) receive(now time.Time, m *Echo, b []byte, n int, v6 bool, from6 netip.Addr) {
	var err error
	var src netip.Addr
	switch {
	case n < 0:
		*m, err = Echo{}, ErrTruncated
	case v6:
		err, src = m.DecodeICMPv6(b[:n]), from6
	default:
		err = m.DecodeIPv4(b[:n])
		src = m.Src
	}
	p.mu.Lock()
	p.handle(now, m, err, src)
	p.mu.Unlock()
}

// handle checks one received message, decoded into m (err: its decode
// error), from src, and applies it if it is a valid reply. Called with
// p.mu held.
func (p *Prober) handle(now time.Time, m *Echo, err error, src netip.Addr) {
	switch {
	case err != nil || !m.IsReply() || m.Code != 0:
		p.stats.malformed.Add(1)
		return
	case m.ID != p.id:
		p.stats.foreignID.Add(1)
		return
	}
	e := p.byAddr[src]
	if e == nil {
		p.stats.wrongSource.Add(1)
		return
	}
	sp := &p.ring[m.Seq]
	age := now.Sub(p.epoch) - sp.at
	var owner *endpoint
	if sp.gen != 0 && int(sp.slot) < len(p.slots) {
		owner = p.slots[sp.slot]
	}
	if owner == nil || owner.gen != sp.gen || age < 0 || age > owner.cfg.Detection() {
		p.stats.unknownSeq.Add(1)
		return
	}
	if owner != e {
		p.stats.wrongSource.Add(1)
		return
	}
	if len(m.Data) != payloadLen || binary.BigEndian.Uint64(m.Data) != sp.token {
		p.stats.badPayload.Add(1)
		return
	}
	sp.gen = 0 // answered: a duplicate is unknown
	p.stats.valid.Add(1)
	if c, changed := e.m.reply(now, age, e.cfg); changed {
		p.emit(e, c)
	}
}
