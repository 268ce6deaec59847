package main

import (
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/liveness"
)

// bfdCause says why a BFD-probed address was found dead.
type bfdCause uint8

const (
	bfdNeverUp     bfdCause = iota + 1 // no session came Up within the start grace
	bfdSessionDown                     // the session left Up (detection time expired, or the path is down)
)

// String returns the cause as a metric label.
func (c bfdCause) String() string {
	switch c {
	case bfdNeverUp:
		return "never_up"
	case bfdSessionDown:
		return "session_down"
	}
	return "none"
}

// bfdChange is a transition of a BFD-probed address: liveness.Change (for
// a transition to dead, Detection is how long it had been added for
// bfdNeverUp, zero otherwise; for alive, how long the session had been Up)
// and, for dead, why.
type bfdChange struct {
	liveness.Change
	cause bfdCause
	diag  bfd.Diag // the session's diagnostic, for bfdSessionDown
}

// bfdMachine is the liveness state of one BFD-probed endpoint address, with
// the semantics of the ICMP prober's (internal/liveness): it starts alive
// (the API said ready); it is dead when its session leaves Up (Down, the
// detection time expired) or when no session came Up within the start grace
// (Detection + bfd.UpSlack) after it was added; it is alive again once its
// session has been Up for HoldDown without leaving Up. A session the target
// side takes down on purpose (AdminDown: `sllbrd target` restarting or
// being upgraded, or the pod's BFD timing removed) is no failure of the
// target (RFC 5882 section 3.2): the address keeps its state, and the API's
// readiness alone decides, until its session is Up again. Were it taken for
// dead, restarting a sidecar would move every flow of its application. It does no I/O and reads no clock: every method takes the
// time. Not safe for concurrent use.
type bfdMachine struct {
	cfg         liveness.Config
	added       time.Time
	alive       bool
	since       time.Time // of the last transition, or added
	transitions uint64
	up          bool      // the session is Up
	upSince     time.Time // when it last came Up
	everUp      bool
}

func newBFDMachine(cfg liveness.Config, now time.Time) *bfdMachine {
	return &bfdMachine{cfg: cfg, added: now, alive: true, since: now}
}

// grace is how long after it was added an address whose session never came
// Up stays alive.
func (m *bfdMachine) grace() time.Duration { return m.cfg.Detection() + bfd.UpSlack }

// session applies a transition of the address's session at now. A session
// going AdminDown here is our own Remove or Shutdown (the SLLBR stopping),
// not a failure of the target: it changes nothing.
func (m *bfdMachine) session(now time.Time, t bfd.Transition) (bfdChange, bool) {
	switch {
	case t.New == bfd.StateUp:
		if !m.up {
			m.up, m.upSince, m.everUp = true, now, true
		}
		return m.tick(now)
	case t.New == bfd.StateAdminDown:
		return bfdChange{}, false
	case m.up:
		m.up = false
		if !m.alive || t.PeerAdminDown {
			// Still in its hold-down: it starts again at the next Up. Or
			// the target side stopped the session: the state stays.
			return bfdChange{}, false
		}
		c := m.die(now, bfdSessionDown, 0)
		c.diag = t.Diag
		return c, true
	}
	return bfdChange{}, false
}

// tick applies the passing of time: the start grace ending without a
// session Up, or the hold-down of a session Up ending.
func (m *bfdMachine) tick(now time.Time) (bfdChange, bool) {
	switch {
	case m.alive && !m.everUp && now.Sub(m.added) >= m.grace():
		return m.die(now, bfdNeverUp, now.Sub(m.added)), true
	case !m.alive && m.up && now.Sub(m.upSince) >= m.cfg.HoldDown:
		m.alive, m.since = true, now
		m.transitions++
		return bfdChange{Change: liveness.Change{Alive: true, At: now, Detection: now.Sub(m.upSince)}}, true
	}
	return bfdChange{}, false
}

func (m *bfdMachine) die(now time.Time, cause bfdCause, silent time.Duration) bfdChange {
	m.alive, m.since = false, now
	m.transitions++
	return bfdChange{Change: liveness.Change{Alive: false, At: now, Detection: silent}, cause: cause}
}

// deadline is when tick may change the state next; zero: only a session
// transition can.
func (m *bfdMachine) deadline() time.Time {
	switch {
	case m.alive && !m.everUp:
		return m.added.Add(m.grace())
	case !m.alive && m.up:
		return m.upSince.Add(m.cfg.HoldDown)
	}
	return time.Time{}
}

// state returns the machine as show reads it (no reply times: BFD has no
// round trip to measure).
func (m *bfdMachine) state() liveness.State {
	return liveness.State{Alive: m.alive, Since: m.since, Transitions: m.transitions}
}
