package bfd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

const (
	// tickGap is the least time between two ticks of Run (see waitTick).
	tickGap     = 2 * time.Millisecond
	socketRetry = time.Second
	idleWait    = time.Minute
	recvBufLen  = 512
	oobBufLen   = 128
)

// Run opens the sockets and runs the sessions until ctx is done (abrupt stop:
// peers detect the loss by timeout) or Shutdown is called. Every socket is
// created by the calling goroutine, so a caller that locked its OS thread
// into a network namespace gets them there.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return ErrRunning
	}
	s.running = true
	s.mu.Unlock()
	defer close(s.done)

	var readers sync.WaitGroup
	evDone := make(chan struct{})
	go s.dispatchEvents(evDone)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for s.waitTick(ctx, timer, s.tick(ctx, &readers)) {
	}
	s.closeAll()
	readers.Wait()
	close(evDone)
	return nil
}

// waitTick waits until next, or until something changed (poke), but in
// either case at least tickGap from now; it reports false when Run must
// end. Each tick visits every session, so at thousands of sessions ticking
// at each one's own deadline, or at each packet received, would spend a
// core on the visits and hold s.mu most of the time (the receive path
// waiting, the listeners' buffers overflowing); with the gap, deadlines are
// met up to tickGap late.
func (s *Server) waitTick(ctx context.Context, timer *time.Timer, next time.Time) bool {
	earliest := time.Now().Add(tickGap)
	timer.Reset(time.Until(later(next, earliest)))
	for {
		select {
		case <-ctx.Done():
			return false
		case <-s.stop:
			return false
		case <-s.wake:
			timer.Reset(time.Until(earliest))
		case <-timer.C:
			return true
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// tick does all due work: opens missing sockets, expires detection timers and
// transmits due packets (written after s.mu is released). It returns when it
// wants to be called again.
func (s *Server) tick(ctx context.Context, readers *sync.WaitGroup) time.Time {
	next := s.collectDue(ctx, readers, s.txOut)
	s.flush(s.txOut)
	return next
}

// collectDue is tick's work under s.mu.
func (s *Server) collectDue(ctx context.Context, readers *sync.WaitGroup, out *outbox) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	next := now.Add(idleWait)
	for _, e := range s.sessions {
		s.ensureSockets(ctx, e, now, readers)
		if e.conn == nil && e.retryAt.Before(next) {
			next = e.retryAt
		}
		if t, changed := e.sess.Expire(now); changed {
			s.emit(e, t)
		}
		out.collect(e, now)
		if d := e.sess.Deadline(); d.Before(next) {
			next = d
		}
	}
	s.tickRetiring(out, now)
	for _, e := range s.retiring {
		if d := e.sess.Deadline(); d.Before(next) {
			next = d
		}
	}
	return next
}

// ensureSockets opens the session's transmit socket and the listener it
// needs, retrying every socketRetry. Called with s.mu held.
func (s *Server) ensureSockets(ctx context.Context, e *entry, now time.Time, readers *sync.WaitGroup) {
	if e.conn != nil || now.Before(e.retryAt) {
		return
	}
	err := s.ensureListener(ctx, e.kind(), readers)
	if err == nil {
		e.conn, err = s.dial(ctx, e.sess.cfg, s.rng)
	}
	if err == nil && e.key.Interface != "" && !e.key.Multihop {
		var ifi *net.Interface
		if ifi, err = net.InterfaceByName(e.key.Interface); err == nil {
			e.ifindex = ifi.Index
		}
	}
	if err != nil {
		if e.lastErr == nil || e.lastErr.Error() != err.Error() {
			s.opts.logger.Warn("bfd: socket", "session", e.key.String(), "err", err)
		}
		e.closeConn()
		e.lastErr, e.retryAt = err, now.Add(socketRetry)
		return
	}
	e.lastErr = nil
}

func (s *Server) ensureListener(ctx context.Context, k listenerKind, readers *sync.WaitGroup) error {
	if s.listeners[k] != nil {
		return nil
	}
	conn, err := listen(ctx, k.v6, s.opts.listenPorts[boolIndex(k.multihop)])
	if err != nil {
		return err
	}
	s.listeners[k] = conn
	readers.Add(1)
	go func() {
		defer readers.Done()
		s.readLoop(conn, k)
	}()
	return nil
}

// readLoop receives packets on one listener until it is closed.
func (s *Server) readLoop(conn *net.UDPConn, k listenerKind) {
	buf := make([]byte, recvBufLen)
	oob := make([]byte, oobBufLen)
	out := newOutbox(4)
	var p Packet
	for {
		n, oobn, _, src, err := conn.ReadMsgUDPAddrPort(buf, oob)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		s.receive(out, &p, buf[:n], src.Addr(), parseAncillary(oob[:oobn]), k)
	}
}

// receive decodes, checks and demultiplexes one datagram (RFC 5881 section
// 3, RFC 5880 section 6.8.6) and hands it to its session. A packet the
// session then has due (a Final answering a Poll goes out at once) is
// written through out after s.mu is released.
func (s *Server) receive(out *outbox, p *Packet, b []byte, src netip.Addr, anc ancillary, k listenerKind) {
	if s.deliver(out, p, b, src, anc, k) {
		s.flush(out)
		s.poke()
	}
}

// deliver is receive's work under s.mu; it reports whether a session took
// the packet.
func (s *Server) deliver(out *outbox, p *Packet, b []byte, src netip.Addr, anc ancillary, k listenerKind) bool {
	err := p.Unmarshal(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := err.(DiscardReason); ok {
		s.discards[r]++
		return false
	}
	src = src.Unmap().WithZone("")
	e, reason := s.demux(p, src, anc.ifindex, k)
	if e == nil {
		s.discards[reason]++
		return false
	}
	if reason != discardNone {
		e.sess.CountDiscard(reason)
		return false
	}
	if !s.ttlOK(anc.ttl, k.multihop) {
		e.sess.CountDiscard(DiscardBadTTL)
		return false
	}
	now := time.Now()
	if t, changed := e.sess.Receive(now, p); changed {
		s.emit(e, t)
	}
	out.collect(e, now)
	return true
}

// ttlOK applies RFC 5881 section 5 ("If no authentication is in use, the TTL
// or Hop Limit MUST be 255; packets with another value MUST be discarded")
// and, for multihop, the configured minimum (RFC 5883 section 2).
func (s *Server) ttlOK(ttl int, multihop bool) bool {
	if multihop {
		return ttl >= int(s.opts.multihopMinTTL)
	}
	return ttl == ttlMax
}

// demux finds the session of a packet: by Your Discriminator when non-zero,
// else by source address and arrival interface (RFC 5881 section 3). A
// session with a non-nil reason matched but must discard the packet.
func (s *Server) demux(p *Packet, src netip.Addr, ifindex int, k listenerKind) (*entry, DiscardReason) {
	if p.YourDiscriminator != 0 {
		e := s.byDisc[p.YourDiscriminator]
		switch {
		case e == nil:
			return nil, DiscardNoSession
		case !e.matches(src, ifindex, k):
			return e, DiscardAddressMismatch
		}
		return e, discardNone
	}
	for _, e := range s.sessions {
		if e.matches(src, ifindex, k) {
			return e, discardNone
		}
	}
	return nil, DiscardNoSession
}

func (e *entry) matches(src netip.Addr, ifindex int, k listenerKind) bool {
	return e.key.Peer == src && e.key.Multihop == k.multihop &&
		(e.ifindex == 0 || ifindex == 0 || e.ifindex == ifindex)
}

// dispatchEvents calls the event handler, in order, until done is closed.
func (s *Server) dispatchEvents(done <-chan struct{}) {
	for {
		select {
		case <-s.evReady:
		case <-done:
			s.deliverEvents()
			return
		}
		s.deliverEvents()
	}
}

func (s *Server) deliverEvents() {
	s.mu.Lock()
	evs := s.events
	s.events = nil
	s.mu.Unlock()
	for _, ev := range evs {
		s.opts.onEvent(ev)
	}
}

// closeAll closes every socket. A Server runs once.
func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.sessions {
		e.closeConn()
	}
	for _, e := range s.retiring {
		s.forget(e)
	}
	s.retiring = nil
	for k, c := range s.listeners {
		_ = c.Close()
		delete(s.listeners, k)
	}
}

// Shutdown stops the server gracefully: every session goes AdminDown (RFC
// 5880 section 6.8.16) and keeps sending AdminDown packets until it has
// sent as many as its Detect Mult (so the peer hears it even with some
// loss) or ctx is done; then Run returns. Shutdown waits for Run.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.running {
		s.mu.Unlock()
		return ErrNotRunning
	}
	now := time.Now()
	for _, e := range s.sessions {
		if t, changed := e.sess.SetAdminDown(now); changed {
			s.emit(e, t)
		}
	}
	s.mu.Unlock()
	s.poke()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !s.adminDownSent() {
		select {
		case <-ctx.Done():
		case <-s.done:
			return nil
		case <-tick.C:
			continue
		}
		break
	}
	s.stopOnce()
	<-s.done // Run returns promptly once stopped
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bfd: shutdown before all AdminDown packets were sent: %w", err)
	}
	return nil
}

func (s *Server) stopOnce() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
}

func (s *Server) adminDownSent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.sessions {
		if !e.adminDownDone() {
			return false
		}
	}
	for _, e := range s.retiring {
		if !e.adminDownDone() {
			return false
		}
	}
	return true
}
