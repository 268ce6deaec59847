package uplink

import "time"

// Damping of BFD-driven BGP recovery.
const (
	// DampingWindow is how long a failure counts towards damping.
	DampingWindow = 60 * time.Second
	// MaxUpDelay caps the wait before BGP is brought back.
	MaxUpDelay = 30 * time.Second
	// EarlyDownGrace: a BFD Down less than this after the session came Up,
	// or after its BGP session became established, whichever is later, is
	// not counted as a failure for damping, at most once per DampingWindow.
	// FRR's bgpd re-registers its BFD session with the real local address
	// right after BGP is established, which its peer sees as one Down:
	// that start-up flap must not delay the next recovery.
	EarlyDownGrace = 10 * time.Second
)

// damper delays recovery after repeated failures of one peer.
type damper struct {
	failures []time.Time // counted failures, pruned to DampingWindow
	forgiven time.Time   // last early Down not counted
}

// failed records a BFD failure at now of a session that has been working
// since started (the later of BFD Up and BGP established; zero if
// unknown). It reports whether the failure counts for damping: an early
// Down (within EarlyDownGrace of started) is forgiven once per
// DampingWindow.
func (d *damper) failed(now, started time.Time) bool {
	early := !started.IsZero() && now.Sub(started) < EarlyDownGrace
	if early && (d.forgiven.IsZero() || now.Sub(d.forgiven) >= DampingWindow) {
		d.forgiven = now
		return false
	}
	d.failures = append(d.failures, now)
	return true
}

// upDelay is how long to wait before bringing BGP back: nothing after the
// first failure in DampingWindow, then 1 s, 2 s, 4 s... up to MaxUpDelay.
func (d *damper) upDelay(now time.Time) time.Duration {
	recent := d.failures[:0]
	for _, t := range d.failures {
		if now.Sub(t) < DampingWindow {
			recent = append(recent, t)
		}
	}
	d.failures = recent
	if len(recent) <= 1 {
		return 0
	}
	return min(time.Second<<(len(recent)-2), MaxUpDelay)
}

// scheduler runs f after d and returns a function that cancels it
// (time.AfterFunc's Stop in production; tests fire timers by hand).
type scheduler func(d time.Duration, f func()) (stop func() bool)

func afterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
