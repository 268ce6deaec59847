package main

import (
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/liveness"
)

// bfdLab is the configuration the machine tests use: detection 800 ms,
// start grace 3.8 s, hold-down 5 s.
var bfdLab = liveness.Config{Interval: 200 * time.Millisecond, Multiplier: 4, HoldDown: 5 * time.Second}

var (
	toUp        = bfd.Transition{Old: bfd.StateInit, New: bfd.StateUp}
	toInit      = bfd.Transition{Old: bfd.StateDown, New: bfd.StateInit}
	upToDown    = bfd.Transition{Old: bfd.StateUp, New: bfd.StateDown, Diag: bfd.DiagControlDetectExpired}
	peerStopped = bfd.Transition{Old: bfd.StateUp, New: bfd.StateDown, Diag: bfd.DiagNeighborSignaledDown, PeerAdminDown: true}
	localAdmin  = bfd.Transition{Old: bfd.StateUp, New: bfd.StateAdminDown, Diag: bfd.DiagAdministrativelyDown}
)

// machineStep drives m at an offset from t0 and checks what it reports.
type machineStep struct {
	at      time.Duration
	t       *bfd.Transition // nil: a tick
	changed bool
	alive   bool          // after the step
	cause   bfdCause      // of a change to dead
	took    time.Duration // the change's Detection
}

func runMachine(t *testing.T, name string, cfg liveness.Config, steps []machineStep) {
	t0 := goldenClock
	m := newBFDMachine(cfg, t0)
	for i, s := range steps {
		now := t0.Add(s.at)
		var c bfdChange
		var changed bool
		if s.t == nil {
			c, changed = m.tick(now)
		} else {
			c, changed = m.session(now, *s.t)
		}
		if changed != s.changed || m.alive != s.alive {
			t.Fatalf("%s, step %d at %v: changed %v, alive %v; want %v, %v", name, i, s.at, changed, m.alive, s.changed, s.alive)
		}
		if !changed {
			continue
		}
		if c.Alive != s.alive || c.cause != s.cause || c.Detection != s.took || !c.At.Equal(now) {
			t.Fatalf("%s, step %d: change %+v, want alive %v, cause %v, detection %v at %v", name, i, c, s.alive, s.cause, s.took, s.at)
		}
		if m.since != now {
			t.Fatalf("%s, step %d: since %v, want the change's time", name, i, m.since)
		}
	}
}

func tr(t bfd.Transition) *bfd.Transition { return &t }

// TestBFDMachine: an address starts alive; it is dead when its session
// leaves Up (Down, the peer's AdminDown) or when none came Up within the
// detection time + 3 s; it is alive again after its session has been Up for
// the hold-down without leaving Up; our own AdminDown is no failure.
func TestBFDMachine(t *testing.T) {
	s := time.Second
	ms := time.Millisecond
	runMachine(t, "down, then back after the hold-down", bfdLab, []machineStep{
		{at: 0, t: nil, alive: true},
		{at: 1500 * ms, t: tr(toUp), alive: true},
		{at: 10 * s, t: tr(upToDown), changed: true, alive: false, cause: bfdSessionDown},
		{at: 11 * s, t: tr(toInit), alive: false},
		{at: 12 * s, t: tr(toUp), alive: false},
		{at: 16 * s, t: nil, alive: false},
		{at: 17 * s, t: tr(upToDown), alive: false}, // a flap within the hold-down: it starts again
		{at: 18 * s, t: tr(toUp), alive: false},
		{at: 22999 * ms, t: nil, alive: false},
		{at: 23 * s, t: nil, changed: true, alive: true, took: 5 * s},
		{at: 24 * s, t: tr(toUp), alive: true}, // a repeated Up changes nothing
	})
	runMachine(t, "never up: dead after the start grace", bfdLab, []machineStep{
		{at: 1 * s, t: tr(toInit), alive: true},
		{at: 2 * s, t: tr(bfd.Transition{Old: bfd.StateInit, New: bfd.StateDown}), alive: true},
		{at: 3799 * ms, t: nil, alive: true},
		{at: 3800 * ms, t: nil, changed: true, alive: false, cause: bfdNeverUp, took: 3800 * ms},
		{at: 10 * s, t: nil, alive: false},
		{at: 20 * s, t: tr(toUp), alive: false},
		{at: 25 * s, t: nil, changed: true, alive: true, took: 5 * s},
	})
	runMachine(t, "the target side stops (restarts): alive, until it is Up again and after", bfdLab, []machineStep{
		{at: 1 * s, t: tr(toUp), alive: true},
		{at: 2 * s, t: tr(peerStopped), alive: true},
		{at: 30 * s, t: nil, alive: true}, // no start grace: it was Up
		{at: 31 * s, t: tr(toUp), alive: true},
		{at: 32 * s, t: tr(upToDown), changed: true, alive: false, cause: bfdSessionDown},
	})
	runMachine(t, "the target side stops while dead: dead until Up for the hold-down", bfdLab, []machineStep{
		{at: 1 * s, t: tr(toUp), alive: true},
		{at: 2 * s, t: tr(upToDown), changed: true, alive: false, cause: bfdSessionDown},
		{at: 3 * s, t: tr(toUp), alive: false},
		{at: 4 * s, t: tr(peerStopped), alive: false},
		{at: 20 * s, t: nil, alive: false},
		{at: 21 * s, t: tr(toUp), alive: false},
		{at: 26 * s, t: nil, changed: true, alive: true, took: 5 * s},
	})
	runMachine(t, "our own AdminDown (removed, shutting down): alive", bfdLab, []machineStep{
		{at: 1 * s, t: tr(toUp), alive: true},
		{at: 2 * s, t: tr(localAdmin), alive: true},
		{at: 30 * s, t: nil, alive: true},
	})
	runMachine(t, "up within the grace: never dead for it", bfdLab, []machineStep{
		{at: 3700 * ms, t: tr(toUp), alive: true},
		{at: time.Minute, t: nil, alive: true},
	})
	noHold := bfdLab
	noHold.HoldDown = 0
	runMachine(t, "hold-down 0: alive at the Up", noHold, []machineStep{
		{at: 1 * s, t: tr(toUp), alive: true},
		{at: 2 * s, t: tr(upToDown), changed: true, alive: false, cause: bfdSessionDown},
		{at: 4 * s, t: tr(toUp), changed: true, alive: true, took: 0},
	})
}

// TestBFDMachineChange: the cause and diagnostic of a session going down,
// and the transitions counted.
func TestBFDMachineChange(t *testing.T) {
	m := newBFDMachine(bfdLab, goldenClock)
	m.session(goldenClock.Add(time.Second), toUp)
	c, _ := m.session(goldenClock.Add(2*time.Second), upToDown)
	if c.cause != bfdSessionDown || c.diag != bfd.DiagControlDetectExpired || c.Detection != 0 {
		t.Errorf("down: %+v, want session_down with the diagnostic", c)
	}
	m.session(goldenClock.Add(3*time.Second), toUp)
	m.tick(goldenClock.Add(8 * time.Second))
	if st := m.state(); !st.Alive || st.Transitions != 2 || !st.Since.Equal(goldenClock.Add(8*time.Second)) || !st.LastReply.IsZero() || st.RTT != 0 {
		t.Errorf("state %+v, want alive since 8 s after 2 transitions, no reply time", st)
	}
	for _, cause := range []bfdCause{0, bfdNeverUp, bfdSessionDown} {
		if cause.String() == "" {
			t.Errorf("cause %d has no name", cause)
		}
	}
}

// TestBFDMachineDeadline: tick is due at the end of the start grace while
// no session came Up, at the end of the hold-down while a dead address's
// session is Up, and never otherwise.
func TestBFDMachineDeadline(t *testing.T) {
	m := newBFDMachine(bfdLab, goldenClock)
	if got, want := m.deadline(), goldenClock.Add(3800*time.Millisecond); !got.Equal(want) {
		t.Errorf("new: deadline %v, want the end of the start grace %v", got, want)
	}
	m.session(goldenClock.Add(time.Second), toUp)
	if got := m.deadline(); !got.IsZero() {
		t.Errorf("up and alive: deadline %v, want none", got)
	}
	m.session(goldenClock.Add(2*time.Second), upToDown)
	if got := m.deadline(); !got.IsZero() {
		t.Errorf("dead, session down: deadline %v, want none", got)
	}
	m.session(goldenClock.Add(3*time.Second), toUp)
	if got, want := m.deadline(), goldenClock.Add(8*time.Second); !got.Equal(want) {
		t.Errorf("dead, session up: deadline %v, want the end of the hold-down %v", got, want)
	}
}
