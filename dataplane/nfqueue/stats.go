package nfqueue

import "sync/atomic"

// Stats is a snapshot of a queue's counters since it was opened. Kernel-side
// drops (queue overflow, failed delivery) are not here: see ReadProcStats.
type Stats struct {
	Packets  uint64 // NFQNL_MSG_PACKET messages received
	Batches  uint64 // receive syscalls that returned at least one datagram
	Accepted uint64 // Accept verdicts sent, including released ones
	Dropped  uint64 // Drop verdicts sent, including OwnDrops and released ones
	Held     uint64 // packets the Handler held
	Released uint64 // verdicts given through Release
	// OwnDrops counts packets dropped because the loop could not parse them
	// (the Handler never saw them); they are also counted in Dropped.
	OwnDrops uint64
	// ParseErrors counts malformed messages, with or without a packet id.
	ParseErrors uint64
	// Foreign counts datagrams not sent by the kernel, which are ignored.
	Foreign       uint64
	RecvErrors    uint64 // failed receive syscalls (ENOBUFS included)
	NoBufs        uint64 // ENOBUFS from the receive syscall
	SendErrors    uint64 // failed verdict sendmsg calls
	VerdictErrors uint64 // verdicts the kernel rejected (NLMSG_ERROR)
	// GSO counts packets the kernel flagged as GSO/GRO aggregates
	// (NFQA_SKB_GSO, reported with WithGSO): one message for many segments.
	GSO uint64
	// Largest is the length of the longest packet received (Packet.Length),
	// over 65535 when GRO/BIG TCP aggregates reach the queue. Add keeps the
	// larger of the two.
	Largest uint64
}

// Add returns the field-wise sum of s and o.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Packets: s.Packets + o.Packets, Batches: s.Batches + o.Batches,
		Accepted: s.Accepted + o.Accepted, Dropped: s.Dropped + o.Dropped,
		Held: s.Held + o.Held, Released: s.Released + o.Released,
		OwnDrops: s.OwnDrops + o.OwnDrops, ParseErrors: s.ParseErrors + o.ParseErrors,
		Foreign: s.Foreign + o.Foreign, RecvErrors: s.RecvErrors + o.RecvErrors,
		NoBufs: s.NoBufs + o.NoBufs, SendErrors: s.SendErrors + o.SendErrors,
		VerdictErrors: s.VerdictErrors + o.VerdictErrors,
		GSO:           s.GSO + o.GSO, Largest: max(s.Largest, o.Largest),
	}
}

// Verdicts is the number of verdicts sent: Accepted + Dropped.
func (s Stats) Verdicts() uint64 { return s.Accepted + s.Dropped }

// counters are the live, concurrently readable counters of one queue. The
// reader adds a whole batch's Stats at once, so the atomics cost per batch,
// not per packet.
type counters struct {
	packets, batches, accepted, dropped, held, released atomic.Uint64
	ownDrops, parseErrors, foreign, recvErrors, noBufs  atomic.Uint64
	sendErrors, verdictErrors, gso                      atomic.Uint64
	largest                                             atomic.Uint64
}

// add adds the non-zero fields of d.
func (c *counters) add(d *Stats) {
	pairs := [...]struct {
		to *atomic.Uint64
		n  uint64
	}{
		{&c.packets, d.Packets}, {&c.batches, d.Batches}, {&c.accepted, d.Accepted},
		{&c.dropped, d.Dropped}, {&c.held, d.Held}, {&c.released, d.Released},
		{&c.ownDrops, d.OwnDrops}, {&c.parseErrors, d.ParseErrors},
		{&c.foreign, d.Foreign}, {&c.recvErrors, d.RecvErrors}, {&c.noBufs, d.NoBufs},
		{&c.sendErrors, d.SendErrors}, {&c.verdictErrors, d.VerdictErrors},
		{&c.gso, d.GSO},
	}
	for _, p := range pairs {
		if p.n != 0 {
			p.to.Add(p.n)
		}
	}
	for cur := c.largest.Load(); d.Largest > cur; cur = c.largest.Load() {
		if c.largest.CompareAndSwap(cur, d.Largest) {
			break
		}
	}
}

// snapshot reads all counters (each atomically, not all at one instant).
func (c *counters) snapshot() Stats {
	return Stats{
		Packets: c.packets.Load(), Batches: c.batches.Load(),
		Accepted: c.accepted.Load(), Dropped: c.dropped.Load(),
		Held: c.held.Load(), Released: c.released.Load(),
		OwnDrops: c.ownDrops.Load(), ParseErrors: c.parseErrors.Load(),
		Foreign: c.foreign.Load(), RecvErrors: c.recvErrors.Load(),
		NoBufs: c.noBufs.Load(), SendErrors: c.sendErrors.Load(),
		VerdictErrors: c.verdictErrors.Load(),
		GSO:           c.gso.Load(), Largest: c.largest.Load(),
	}
}
