package bfd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"
)

// sender is a session's transmit socket (*net.UDPConn in production).
type sender interface {
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	Close() error
}

// dialFunc opens a session's transmit socket.
type dialFunc func(ctx context.Context, cfg SessionConfig, rng *rand.Rand) (sender, error)

func dialUDP(ctx context.Context, cfg SessionConfig, rng *rand.Rand) (sender, error) {
	c, err := openSender(ctx, cfg, rng)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// outPacket is one packet a session has due, marshalled under Server.mu and
// written after it is released, in the order of seq (see txOrder).
type outPacket struct {
	e    *entry
	conn sender
	to   netip.AddrPort
	seq  uint64 // entry.txSeq when built
	buf  [PacketLen]byte
	n    int
}

// outbox collects the packets of one pass (a tick or a received packet) so
// that no socket is written while Server.mu is held. Each goroutine that
// sends owns one; its slice is reused, so a warm outbox does not allocate.
type outbox struct {
	pkts  []outPacket
	taken outPacket // a packet another goroutine left to this one (txOrder)
	sent  []sendFailure
}

type sendFailure struct {
	e   *entry
	err error
}

func newOutbox(capacity int) *outbox { return &outbox{pkts: make([]outPacket, 0, capacity)} }

// collect takes every packet the session has due into the outbox. Called
// with s.mu held.
func (o *outbox) collect(e *entry, now time.Time) {
	var p Packet
	for e.sess.Transmit(now, &p) {
		if e.conn == nil {
			e.sendErrors++
			continue
		}
		e.txSeq++
		o.pkts = append(o.pkts, outPacket{e: e, conn: e.conn, to: e.peer, seq: e.txSeq})
		out := &o.pkts[len(o.pkts)-1]
		out.n, _ = p.MarshalTo(out.buf[:])
	}
}

// flush writes the collected packets, without s.mu and each session's in
// the order they were built (txOrder), then records the failures under it.
func (s *Server) flush(o *outbox) {
	if len(o.pkts) == 0 {
		return
	}
	for i := range o.pkts {
		o.send(&o.pkts[i])
	}
	clear(o.pkts) // drop the references to entries and sockets
	o.pkts = o.pkts[:0]
	if len(o.sent) == 0 {
		return
	}
	s.mu.Lock()
	for _, f := range o.sent {
		f.e.sendErrors++
		f.e.lastErr = fmt.Errorf("bfd: send to %v: %w", f.e.peer, f.err)
	}
	s.mu.Unlock()
	clear(o.sent)
	o.sent = o.sent[:0]
}

// write writes one packet and keeps its failure for flush to record.
func (o *outbox) write(p *outPacket) {
	// A socket closed meanwhile belongs to a session removed or re-addressed
	// since collect: not a send failure.
	if _, err := p.conn.WriteToUDPAddrPort(p.buf[:p.n], p.to); err != nil && !errors.Is(err, net.ErrClosed) {
		o.sent = append(o.sent, sendFailure{e: p.e, err: err})
	}
}

// adminDownDone reports whether a session held AdminDown has told its peer
// often enough: Detect Mult packets, so that the peer hears it even with
// some loss (as Shutdown does), or it has no socket to send them on.
func (e *entry) adminDownDone() bool {
	return e.conn == nil || e.sess.c.adminDownOut >= uint64(e.sess.cfg.DetectMultiplier)
}

// tickRetiring sends the AdminDown packets of removed sessions and closes
// those that have sent enough. Called with s.mu held.
func (s *Server) tickRetiring(o *outbox, now time.Time) {
	kept := s.retiring[:0]
	for _, e := range s.retiring {
		if e.adminDownDone() {
			s.forget(e)
			continue
		}
		o.collect(e, now)
		kept = append(kept, e)
	}
	clear(s.retiring[len(kept):])
	s.retiring = kept
}

// forget closes a removed session's socket and releases its discriminator.
// Called with s.mu held.
func (s *Server) forget(e *entry) {
	e.closeConn()
	if s.byDisc[e.sess.localDisc] == e {
		delete(s.byDisc, e.sess.localDisc)
	}
}
