package liveness

import "time"

// FirstReplyGrace is what an address that has never replied gets on top of
// the detection time before it is found dead: the kernel's neighbour
// resolution retransmit time (ARP and ND, 1 s by default). A new address's
// first probes wait in the neighbour queue while its link-layer address is
// resolved, and one lost resolution exchange (a full neighbour table on
// either side, a dropped frame) holds them for that second, longer than
// the default detection time: without the grace a live target would be
// taken out for a hold-down.
const FirstReplyGrace = time.Second

// machine is the liveness of one address. It performs no I/O and reads no
// clock: the prober calls tick at every probe it sends (the interval that
// the previous probe opened has ended) and reply at every valid reply, with
// the current time.
//
// Misses are counted per probe, not per elapsed Interval: if the prober
// itself is stalled (CPU starvation, a stopped process), no probe goes out
// and nothing is counted against the targets.
type machine struct {
	alive       bool
	since       time.Time // of the last transition, or when the address was added
	transitions uint64
	lastReply   time.Time
	rtt         time.Duration
	misses      int       // consecutive intervals without a valid reply
	replied     bool      // a valid reply in the current interval
	probing     bool      // a probe went out: the current interval counts
	recovering  time.Time // dead: the first valid reply of the current recovery; zero: none
}

func newMachine(now time.Time) machine {
	return machine{alive: true, since: now}
}

// tick ends the current interval at now (the prober then sends the next
// probe, opening a new one) and reports a transition to dead.
func (m *machine) tick(now time.Time, cfg Config) (Change, bool) {
	ended := m.probing
	m.probing = true
	if !ended {
		return Change{}, false
	}
	if m.replied {
		m.replied, m.misses = false, 0
		return Change{}, false
	}
	m.misses++
	if m.misses < cfg.Multiplier {
		return Change{}, false
	}
	m.recovering = time.Time{} // a run of Multiplier misses restarts any recovery
	if !m.alive || m.lastReply.IsZero() && now.Sub(m.since) < cfg.Detection()+FirstReplyGrace {
		return Change{}, false
	}
	silent := m.since
	if m.lastReply.After(silent) {
		silent = m.lastReply
	}
	return m.transition(now, false, now.Sub(silent)), true
}

// reply records a valid reply received at now with round-trip time rtt and
// reports a transition to alive.
func (m *machine) reply(now time.Time, rtt time.Duration, cfg Config) (Change, bool) {
	m.replied, m.lastReply, m.rtt = true, now, rtt
	if m.alive {
		return Change{}, false
	}
	if m.recovering.IsZero() {
		// From its arrival, not the probe's departure: a probe may have
		// waited in a local queue (neighbour resolution) while the target
		// was still unreachable.
		m.recovering = now
	}
	if held := now.Sub(m.recovering); held >= cfg.HoldDown {
		m.recovering = time.Time{}
		return m.transition(now, true, held), true
	}
	return Change{}, false
}

func (m *machine) transition(now time.Time, alive bool, d time.Duration) Change {
	m.alive, m.since = alive, now
	m.transitions++
	return Change{Alive: alive, At: now, Detection: d}
}
