package bfd

import (
	"math/rand/v2"
	"time"
)

// Transition is a change of a session's local state.
type Transition struct {
	Old, New State
	// Diag is the local diagnostic after the change (why the session left
	// Up, for example).
	Diag Diag
	// PeerAdminDown is set when the session went Down because the peer
	// signalled AdminDown. RFC 5882 section 3.2: this is not a failure of
	// the path and must not be acted upon as one.
	PeerAdminDown bool
}

// Session is the state machine of one BFD session in asynchronous mode
// (RFC 5880 sections 6.2 and 6.8). It does no I/O and reads no clock: the
// caller passes the current time to every method, feeds it received packets
// that passed Packet.Unmarshal, asks it for packets to send (Transmit) and
// for detection expiry (Expire) no later than Deadline. Not safe for
// concurrent use.
type Session struct {
	cfg SessionConfig
	rng *rand.Rand

	state, remoteState    State
	localDisc, remoteDisc uint32
	localDiag, remoteDiag Diag
	remoteMinRx           time.Duration // bfd.RemoteMinRxInterval
	remoteMinTx           time.Duration // last received Desired Min TX
	remoteMult            uint8

	advTx, advRx time.Duration // intervals advertised in our packets
	effTx, effRx time.Duration // intervals in effect for our timers
	polling      bool          // a Poll Sequence is in progress (RFC 5880 6.5)
	finalDue     bool          // the peer polled; answer with F as soon as possible
	txNow        bool          // send a periodic packet at once (state change)
	nextTx       time.Time
	detectAt     time.Time // zero: detection timer not armed

	c sessionCounters
}

type sessionCounters struct {
	packetsIn, packetsOut uint64
	adminDownOut          uint64 // AdminDown packets sent since entering AdminDown
	upTransitions         uint64
	downTransitions       uint64
	discards              DiscardCounts
}

// NewSession returns a session in state Down that transmits at once.
// localDisc must be non-zero and unique among the caller's sessions; rng
// drives the transmit jitter.
func NewSession(cfg SessionConfig, localDisc uint32, rng *rand.Rand, now time.Time) *Session {
	s := &Session{
		cfg:         cfg.withDefaults(),
		rng:         rng,
		state:       StateDown,
		remoteState: StateDown,
		localDisc:   localDisc,
		remoteMinRx: time.Microsecond, // RFC 5880 6.8.1: "initialized to 1"
		nextTx:      now,
	}
	s.applyTimers(now)
	return s
}

// State returns the local session state.
func (s *Session) State() State { return s.state }

// LocalDiscriminator returns bfd.LocalDiscr.
func (s *Session) LocalDiscriminator() uint32 { return s.localDisc }

// Config returns the session's configuration with defaults applied.
func (s *Session) Config() SessionConfig { return s.cfg }

// Update changes the session's timers and multiplier. Interval changes start a
// Poll Sequence when Up (RFC 5880 section 6.8.3); the peer or addresses of
// cfg are ignored.
func (s *Session) Update(now time.Time, cfg SessionConfig) {
	cfg = cfg.withDefaults()
	s.cfg.DesiredMinTx = cfg.DesiredMinTx
	s.cfg.RequiredMinRx = cfg.RequiredMinRx
	s.cfg.DetectMultiplier = cfg.DetectMultiplier
	if s.state != StateAdminDown {
		s.applyTimers(now)
	}
}

// applyTimers recomputes the advertised intervals and decides which take
// effect at once (RFC 5880 section 6.8.3): while not Up, Desired Min TX is at
// least one second and changes apply immediately; while Up a change starts a
// Poll Sequence, a faster transmit rate and a longer detection time apply at
// once, the others only when the Final arrives.
func (s *Session) applyTimers(now time.Time) {
	up := s.state == StateUp
	tx := s.cfg.DesiredMinTx
	if !up {
		tx = max(tx, slowTxInterval)
	}
	rx := s.cfg.RequiredMinRx
	if tx == s.advTx && rx == s.advRx {
		return
	}
	s.advTx, s.advRx = tx, rx
	if up {
		// 6.8.3: "If either bfd.DesiredMinTxInterval or
		// bfd.RequiredMinRxInterval is changed, a Poll Sequence MUST be
		// initiated."
		s.polling = true
	}
	// 6.8.3: an increased DesiredMinTx "MUST NOT" change the transmit
	// interval before the Poll Sequence completes when Up.
	if !up || tx <= s.effTx || s.effTx == 0 {
		s.effTx = tx
	}
	// 6.8.3: a reduced RequiredMinRx: "the previous value ... MUST be used
	// when calculating the Detection Time" until the Poll Sequence completes.
	if !up || rx >= s.effRx {
		s.effRx = rx
	}
	s.pullInTx(now)
}

// pullInTx brings the next periodic transmission forward when the transmit
// interval shrank.
func (s *Session) pullInTx(now time.Time) {
	if next := now.Add(s.jitter()); next.Before(s.nextTx) {
		s.nextTx = next
	}
}

func (s *Session) jitter() time.Duration {
	return jittered(s.rng, txInterval(s.effTx, s.remoteMinRx), s.cfg.DetectMultiplier)
}

// setState changes the local state and does the bookkeeping every change
// needs. It returns the transition.
func (s *Session) setState(now time.Time, st State, diag Diag) Transition {
	t := Transition{Old: s.state, New: st, Diag: diag}
	s.state, s.localDiag = st, diag
	s.txNow = true
	if t.Old == StateUp {
		s.c.downTransitions++
		s.polling = false // timers apply at once when not Up
	}
	if st == StateUp {
		s.c.upTransitions++
	}
	if st == StateAdminDown {
		s.polling = false
		s.c.adminDownOut = 0
		return t // keep the rate: the peer should hear AdminDown quickly
	}
	s.applyTimers(now)
	return t
}
