package bfd

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Errors returned by Server methods.
var (
	ErrExists     = errors.New("bfd: session already exists")
	ErrNotFound   = errors.New("bfd: no such session")
	ErrRunning    = errors.New("bfd: server already running")
	ErrNotRunning = errors.New("bfd: server not running")
)

// Stats is a snapshot of one session of a Server.
type Stats struct {
	Key    Key
	Config SessionConfig
	SessionStats
	SendErrors uint64
	// PacketsSuperseded counts packets built (and counted in PacketsOut)
	// but not written, because a newer packet of the session was written
	// first.
	PacketsSuperseded uint64
	// SocketError is the last error opening or writing the session's
	// socket; empty when the last attempt succeeded.
	SocketError string
}

// Server runs BFD sessions: it owns the sockets, demultiplexes received
// packets, drives the session timers and reports state changes. Its methods
// are safe for concurrent use.
type Server struct {
	opts options

	mu        sync.Mutex
	rng       *mrand.Rand
	sessions  map[Key]*entry
	byDisc    map[uint32]*entry
	listeners map[listenerKind]*net.UDPConn
	retiring  []*entry      // removed, still sending AdminDown
	discards  DiscardCounts // packets not attributable to a session
	events    []Event
	running   bool
	stop      chan struct{} // closed by Shutdown to end Run
	done      chan struct{} // closed when Run has returned

	wake    chan struct{}
	evReady chan struct{}
	dial    dialFunc // opens transmit sockets (tests replace it)
	txOut   *outbox  // the Run goroutine's packets of one tick
}

// entry is a session with its transport state.
type entry struct {
	key        Key
	sess       *Session
	conn       sender
	peer       netip.AddrPort
	ifindex    int // arrival interface to match; 0: any
	retryAt    time.Time
	sendErrors uint64
	lastErr    error
	txSeq      uint64  // sequence of the last packet built (outPacket.seq)
	tx         txOrder // writes the packets in txSeq order, without s.mu
}

type listenerKind struct{ v6, multihop bool }

func (e *entry) kind() listenerKind {
	return listenerKind{v6: e.key.Peer.Is6(), multihop: e.key.Multihop}
}

// NewServer returns a Server with no sessions. Nothing happens on the
// network until Run is called.
func NewServer(opts ...Option) *Server {
	o := defaultOptions()
	for _, f := range opts {
		f(&o)
	}
	var seed [16]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails on Linux
	return &Server{
		opts:      o,
		rng:       mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:]))),
		sessions:  map[Key]*entry{},
		byDisc:    map[uint32]*entry{},
		listeners: map[listenerKind]*net.UDPConn{},
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
		evReady:   make(chan struct{}, 1),
		dial:      dialUDP,
		txOut:     newOutbox(16),
	}
}

// Add starts a session. Its sockets are opened by Run.
func (s *Server) Add(cfg SessionConfig) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("bfd: add %v: %w", cfg.Key(), err)
	}
	cfg = cfg.withDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	key := cfg.Key()
	if _, ok := s.sessions[key]; ok {
		return fmt.Errorf("bfd: add %v: %w", key, ErrExists)
	}
	disc := s.newDiscriminator()
	port := s.opts.peerPorts[boolIndex(cfg.Multihop)]
	peer := netip.AddrPortFrom(peerWithZone(cfg), port)
	e := &entry{key: key, sess: NewSession(cfg, disc, s.rng, time.Now()), peer: peer}
	s.sessions[key] = e
	s.byDisc[disc] = e
	s.poke()
	return nil
}

// Update changes a session's timers, multiplier and local address. Changed
// intervals start a Poll Sequence when the session is Up.
func (s *Server) Update(cfg SessionConfig) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("bfd: update %v: %w", cfg.Key(), err)
	}
	cfg = cfg.withDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[cfg.Key()]
	if !ok {
		return fmt.Errorf("bfd: update %v: %w", cfg.Key(), ErrNotFound)
	}
	if cfg.Local != e.sess.cfg.Local {
		e.sess.cfg.Local = cfg.Local
		e.closeConn() // reopened by Run with the new source address
	}
	e.sess.Update(time.Now(), cfg)
	s.poke()
	return nil
}

// Remove ends a session. It goes AdminDown at once (RFC 5880 section
// 6.8.16) and, while Run runs, keeps sending AdminDown packets at its
// transmit rate until it has sent Detect Mult of them, as Shutdown does, so
// that the peer hears it even with some loss; then its socket is closed.
// The key is free for Add as soon as Remove returns.
func (s *Server) Remove(key Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[key]
	if !ok {
		return fmt.Errorf("bfd: remove %v: %w", key, ErrNotFound)
	}
	delete(s.sessions, key)
	if t, changed := e.sess.SetAdminDown(time.Now()); changed {
		s.emit(e, t)
	}
	if !s.running || e.adminDownDone() {
		s.forget(e)
		return nil
	}
	s.retiring = append(s.retiring, e) // its discriminator stays taken until then
	s.poke()
	return nil
}

// Stats returns a snapshot of one session.
func (s *Server) Stats(key Key) (Stats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[key]
	if !ok {
		return Stats{}, false
	}
	return e.stats(), true
}

// AllStats returns a snapshot of every session, in no particular order.
func (s *Server) AllStats() []Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Stats, 0, len(s.sessions))
	for _, e := range s.sessions {
		out = append(out, e.stats())
	}
	return out
}

// Discards returns the counts of received packets that could not be
// attributed to a session (malformed, or no matching session).
func (s *Server) Discards() DiscardCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.discards
}

func (e *entry) stats() Stats {
	st := Stats{Key: e.key, Config: e.sess.cfg, SessionStats: e.sess.Stats(), SendErrors: e.sendErrors,
		PacketsSuperseded: e.tx.supersededCount()}
	if e.lastErr != nil {
		st.SocketError = e.lastErr.Error()
	}
	return st
}

func (e *entry) closeConn() {
	if e.conn != nil {
		_ = e.conn.Close()
		e.conn = nil
		e.retryAt = time.Time{}
	}
}

// newDiscriminator returns a random non-zero discriminator no session uses
// (RFC 5880 section 6.8.1: "MUST be unique across all BFD sessions on this
// system, and nonzero"). Called with s.mu held.
func (s *Server) newDiscriminator() uint32 {
	for {
		d := s.rng.Uint32()
		if _, used := s.byDisc[d]; d != 0 && !used {
			return d
		}
	}
}

// emit queues an event for the handler. Called with s.mu held.
func (s *Server) emit(e *entry, t Transition) {
	if s.opts.onEvent == nil {
		return
	}
	s.events = append(s.events, Event{Key: e.key, Transition: t, LocalDiscriminator: e.sess.localDisc})
	select {
	case s.evReady <- struct{}{}:
	default:
	}
}

// poke wakes the Run loop to recompute its deadline.
func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func peerWithZone(cfg SessionConfig) netip.Addr {
	if cfg.Peer.Is6() && cfg.Peer.IsLinkLocalUnicast() && cfg.Interface != "" {
		return cfg.Peer.WithZone(cfg.Interface)
	}
	return cfg.Peer
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}
