package targetbfd

import (
	"net/netip"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
)

// Cause says why a next hop is found down.
type Cause uint8

// The causes of a next hop found down.
const (
	// CauseNeverUp: its session has not come Up within the start grace.
	CauseNeverUp Cause = iota + 1
	// CauseSessionDown: its session left Up (the detection time expired,
	// or the path is down).
	CauseSessionDown
	// CausePeerAdminDown: the SLLBR took the session down (AdminDown): it
	// is stopping, has withdrawn its VIPs and drains.
	CausePeerAdminDown
)

// String returns the cause as words for logs.
func (c Cause) String() string {
	switch c {
	case CauseNeverUp:
		return "no BFD session came up"
	case CauseSessionDown:
		return "its BFD session went down"
	case CausePeerAdminDown:
		return "the SLLBR took its BFD session down (AdminDown: it is stopping)"
	}
	return "up"
}

// health is what the sessions say of each next hop: whether it is down,
// and why. It does no I/O and reads no clock: every method takes the time.
// Not safe for concurrent use.
type health struct {
	peers map[bfd.Key]*peerHealth
}

type peerHealth struct {
	disc      uint32        // the session instance whose events count (bfd.Event.LocalDiscriminator)
	added     time.Time     // when its session was added (or started again)
	detection time.Duration // Multiplier × Interval
	up        bool          // the session is Up
	everUp    bool
	adminDown bool  // it left Up by the peer's AdminDown
	carried   Cause // down when its server started again: down until Up
}

func newHealth() *health { return &health{peers: map[bfd.Key]*peerHealth{}} }

// set records a session added or updated at now: a new one starts in its
// grace; a known one keeps its state and takes the new instance and timing.
func (h *health) set(key bfd.Key, disc uint32, detection time.Duration, now time.Time) {
	p, ok := h.peers[key]
	if !ok {
		p = &peerHealth{added: now}
		h.peers[key] = p
	}
	p.disc, p.detection = disc, detection
}

// retain forgets the sessions not in keep (removed, or refused by a new
// server).
func (h *health) retain(keep func(bfd.Key) bool) {
	for k := range h.peers {
		if !keep(k) {
			delete(h.peers, k)
		}
	}
}

// restart records that every session starts again at now on a new server:
// a next hop found down stays down until its new session is Up; the
// others start a new grace, so a restart never takes a next hop that
// answered out of the routes.
func (h *health) restart(now time.Time) {
	for _, p := range h.peers {
		*p = peerHealth{added: now, detection: p.detection, carried: p.cause(now)}
	}
}

// event applies a transition of a session; one of another instance (a
// session removed since, or an earlier server's) is ignored, and so is our
// own AdminDown (the session being removed).
func (h *health) event(ev bfd.Event) {
	p, ok := h.peers[ev.Key]
	if !ok || ev.LocalDiscriminator != p.disc || ev.New == bfd.StateAdminDown {
		return
	}
	p.up = ev.New == bfd.StateUp
	switch {
	case p.up:
		p.everUp, p.adminDown, p.carried = true, false, 0
	case ev.PeerAdminDown:
		p.adminDown = true
	}
}

// cause returns why p is down at now; 0: it is not. A next hop is down
// while its session is not Up, once it has been Up, or once its start
// grace has passed.
func (p *peerHealth) cause(now time.Time) Cause {
	switch {
	case p.up:
		return 0
	case p.carried != 0:
		return p.carried
	case p.adminDown:
		return CausePeerAdminDown
	case p.everUp:
		return CauseSessionDown
	case !now.Before(p.graceEnd()):
		return CauseNeverUp
	}
	return 0
}

func (p *peerHealth) graceEnd() time.Time { return p.added.Add(p.detection + bfd.UpSlack) }

// down returns the next hops down at now, with why.
func (h *health) down(now time.Time) map[netip.Addr]Cause {
	out := map[netip.Addr]Cause{}
	for k, p := range h.peers {
		if c := p.cause(now); c != 0 {
			out[k.Peer] = c
		}
	}
	return out
}

// next returns when a start grace ends next after now (zero: none is
// running): only a session event changes the rest.
func (h *health) next(now time.Time) time.Time {
	var next time.Time
	for _, p := range h.peers {
		if p.up || p.everUp || p.adminDown || p.carried != 0 {
			continue
		}
		if end := p.graceEnd(); end.After(now) && (next.IsZero() || end.Before(next)) {
			next = end
		}
	}
	return next
}
