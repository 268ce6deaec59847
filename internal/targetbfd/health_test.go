package targetbfd

import (
	"maps"
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
)

// healthLab drives a health with a fake clock: t0 plus the offsets the
// steps give.
type healthLab struct {
	t  *testing.T
	h  *health
	t0 time.Time
}

const detection = 300 * time.Millisecond // 3 × 100 ms

func (l healthLab) at(d time.Duration) time.Time { return l.t0.Add(d) }

func (l healthLab) event(k bfd.Key, disc uint32, old, new bfd.State, peerAdminDown bool) {
	l.h.event(bfd.Event{Key: k, LocalDiscriminator: disc, Transition: bfd.Transition{Old: old, New: new, PeerAdminDown: peerAdminDown}})
}

// expect checks the next hops down at d after t0.
func (l healthLab) expect(step string, d time.Duration, want map[netip.Addr]Cause) {
	l.t.Helper()
	if got := l.h.down(l.at(d)); !maps.Equal(got, want) {
		l.t.Errorf("%s (t0+%v): down %v, want %v", step, d, got, want)
	}
}

// TestHealth: the rule that takes a next hop out of its Gateways' routes.
// Down while its session is not Up once it has been Up (whatever took it
// down: detection, the peer's AdminDown), or once Multiplier × Interval +
// bfd.UpSlack have passed since it was added without an Up; back at its
// first Up (no hold-down: the reply path is stateless). Events of another
// session instance and our own AdminDown change nothing.
func TestHealth(t *testing.T) {
	l := healthLab{t: t, h: newHealth(), t0: time.Unix(1_000_000, 0)}
	a, b := key("169.111.100.1", "net1"), key("169.111.100.2", "net1")
	l.h.set(a, 11, detection, l.at(0))
	l.h.set(b, 12, detection, l.at(0))
	grace := detection + bfd.UpSlack

	l.expect("added, in the grace", 0, map[netip.Addr]Cause{})
	if next := l.h.next(l.at(0)); !next.Equal(l.at(grace)) {
		t.Errorf("next %v, want the grace's end t0+%v", next.Sub(l.t0), grace)
	}
	l.event(a, 11, bfd.StateDown, bfd.StateInit, false)
	l.event(a, 11, bfd.StateInit, bfd.StateUp, false)
	l.expect("a Up, b just before its grace ends", grace-time.Millisecond, map[netip.Addr]Cause{})
	l.expect("b never Up: down at its grace's end", grace, map[netip.Addr]Cause{b.Peer: CauseNeverUp})
	if next := l.h.next(l.at(grace)); !next.IsZero() {
		t.Errorf("next %v after every grace, want none", next.Sub(l.t0))
	}

	l.event(b, 12, bfd.StateDown, bfd.StateUp, false)
	l.expect("b Up at last: back at once", grace, map[netip.Addr]Cause{})

	l.event(a, 11, bfd.StateUp, bfd.StateDown, false)
	l.expect("a's session down (detection)", grace, map[netip.Addr]Cause{a.Peer: CauseSessionDown})
	l.event(a, 11, bfd.StateDown, bfd.StateInit, false)
	l.expect("a Init is not Up", grace, map[netip.Addr]Cause{a.Peer: CauseSessionDown})
	l.event(a, 11, bfd.StateInit, bfd.StateUp, false)
	l.expect("a Up again", grace, map[netip.Addr]Cause{})

	l.event(b, 12, bfd.StateUp, bfd.StateDown, true)
	l.expect("b's SLLBR stopping (AdminDown)", grace, map[netip.Addr]Cause{b.Peer: CausePeerAdminDown})

	l.event(a, 99, bfd.StateUp, bfd.StateDown, false)
	l.event(a, 11, bfd.StateUp, bfd.StateAdminDown, false)
	l.event(key("169.111.100.3", "net1"), 13, bfd.StateUp, bfd.StateDown, false)
	l.expect("another instance's event, our own AdminDown, an unknown key: nothing", grace, map[netip.Addr]Cause{b.Peer: CausePeerAdminDown})

	// A changed timing keeps the state; a session no longer wanted is
	// forgotten, and starts again in a grace when added back.
	l.h.set(b, 12, 2*detection, l.at(grace))
	l.expect("b's timing changed: still down", grace, map[netip.Addr]Cause{b.Peer: CausePeerAdminDown})
	l.h.retain(func(k bfd.Key) bool { return k != b })
	l.expect("b removed", grace, map[netip.Addr]Cause{})
	l.h.set(b, 14, detection, l.at(10*time.Second))
	l.expect("b added again, in a new grace", 10*time.Second+grace-time.Millisecond, map[netip.Addr]Cause{})
	l.expect("b added again, never Up", 10*time.Second+grace, map[netip.Addr]Cause{b.Peer: CauseNeverUp})
}

// TestHealthRestart: when the server starts again (its sessions with it),
// a next hop found down stays down until its new session is Up, and one
// that answered starts a new grace: a restart never takes a next hop that
// answered out of the routes. Events of the earlier sessions are ignored.
func TestHealthRestart(t *testing.T) {
	l := healthLab{t: t, h: newHealth(), t0: time.Unix(1_000_000, 0)}
	a, b, c := key("169.111.100.1", "net1"), key("169.111.100.2", "net1"), key("fd00:111::1", "net1")
	for i, k := range []bfd.Key{a, b, c} {
		l.h.set(k, uint32(i+1), detection, l.at(0))
	}
	l.event(a, 1, bfd.StateDown, bfd.StateUp, false)
	l.event(b, 2, bfd.StateDown, bfd.StateUp, false)
	l.event(b, 2, bfd.StateUp, bfd.StateDown, false)
	grace := detection + bfd.UpSlack
	l.expect("before", grace, map[netip.Addr]Cause{b.Peer: CauseSessionDown, c.Peer: CauseNeverUp})

	restart := 20 * time.Second
	l.h.restart(l.at(restart))
	for i, k := range []bfd.Key{a, b, c} {
		l.h.set(k, uint32(i+10), detection, l.at(restart))
	}
	l.event(a, 1, bfd.StateUp, bfd.StateDown, false) // the old session's
	l.expect("restarted: the down ones stay down, a in a new grace", restart, map[netip.Addr]Cause{b.Peer: CauseSessionDown, c.Peer: CauseNeverUp})
	if next := l.h.next(l.at(restart)); !next.Equal(l.at(restart + grace)) {
		t.Errorf("next t0+%v, want a's new grace's end t0+%v", next.Sub(l.t0), restart+grace)
	}
	l.event(c, 12, bfd.StateDown, bfd.StateUp, false)
	l.expect("c Up on the new server", restart, map[netip.Addr]Cause{b.Peer: CauseSessionDown})
	l.expect("a not Up on the new server within its grace", restart+grace, map[netip.Addr]Cause{a.Peer: CauseNeverUp, b.Peer: CauseSessionDown})
}
