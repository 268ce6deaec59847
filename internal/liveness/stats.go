package liveness

import "sync/atomic"

// Stats are the prober's counters since New.
type Stats struct {
	ProbesSent    uint64 // echo requests the kernel accepted
	SendErrors    uint64 // echo requests the kernel refused (each is a miss for its address)
	RepliesValid  uint64 // echo replies that passed every check
	ReceiveErrors uint64 // failed reads of a socket (other than "nothing to read")
	// ReceiveDrops: datagrams the kernel dropped on the prober's sockets
	// (receive buffer full, or an ICMPv6 message with a bad checksum), read
	// from the sockets (SO_MEMINFO) while they are open.
	ReceiveDrops uint64
	Ignored      Ignored
}

// Ignored counts received messages that were not a valid reply, by the
// first check they failed (in this order).
type Ignored struct {
	Malformed       uint64 // not a well-formed echo reply: truncated, bad header or checksum, wrong type or code
	ForeignID       uint64 // another identifier: another prober's or ping's reply
	WrongSource     uint64 // from an address not probed, or not the one the sequence number was sent to
	UnknownSequence uint64 // a sequence number not sent, already answered, or sent longer ago than the address's Detection
	PayloadMismatch uint64 // the data differs from what the probe carried (a forged or corrupted reply)
}

// Total is the number of ignored messages.
func (i Ignored) Total() uint64 {
	return i.Malformed + i.ForeignID + i.WrongSource + i.UnknownSequence + i.PayloadMismatch
}

type counters struct {
	sent, sendErrors, valid, recvErrors                       atomic.Uint64
	malformed, foreignID, wrongSource, unknownSeq, badPayload atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		ProbesSent:    c.sent.Load(),
		SendErrors:    c.sendErrors.Load(),
		RepliesValid:  c.valid.Load(),
		ReceiveErrors: c.recvErrors.Load(),
		Ignored: Ignored{
			Malformed:       c.malformed.Load(),
			ForeignID:       c.foreignID.Load(),
			WrongSource:     c.wrongSource.Load(),
			UnknownSequence: c.unknownSeq.Load(),
			PayloadMismatch: c.badPayload.Load(),
		},
	}
}
