package nfqueue

import "golang.org/x/sys/unix"

// batch turns the datagrams of one receive call into verdict messages: it
// parses every packet, asks the Handler, and appends the verdicts to out.
// It touches no socket, so the whole parse-handle-encode path runs (and is
// tested) in memory. Everything it uses is allocated once.
type batch struct {
	queue   uint16
	handler Handler
	out     []byte // verdict messages, sent with one sendmsg
	delta   Stats  // counts of this batch, added to the queue's counters
	pkt     Packet
	verdict Verdict
}

func newBatch(queue uint16, size int) *batch {
	return &batch{queue: queue, out: make([]byte, 0, size*maxVerdictBytes)}
}

// reset starts a new batch.
func (b *batch) reset() {
	b.out = b.out[:0]
	b.delta = Stats{}
}

// datagram handles every netlink message of one received datagram.
func (b *batch) datagram(d []byte) {
	for len(d) > 0 {
		typ, msg, rest, err := splitMessage(d)
		d = rest
		switch {
		case msg != nil && typ == typePacket:
			b.packet(msg, err) // a packet cut short may still have its id
		case err != nil:
			b.delta.ParseErrors++
		case typ == unix.NLMSG_ERROR:
			b.kernelError(msg)
		}
	}
}

// packet handles one NFQNL_MSG_PACKET message; splitErr is the framing
// error, if any, of a message cut short.
func (b *batch) packet(msg []byte, splitErr error) {
	b.delta.Packets++
	hasID, err := parsePacket(msg, &b.pkt)
	if err == nil {
		err = splitErr
	}
	if err != nil {
		b.delta.ParseErrors++
		if hasID {
			b.delta.OwnDrops++
			b.verdict = Verdict{}
			b.emit(b.pkt.ID, &b.verdict)
		}
		return
	}
	if b.pkt.SkbInfo&SkbGSO != 0 {
		b.delta.GSO++
	}
	b.delta.Largest = max(b.delta.Largest, uint64(b.pkt.Length))
	b.verdict = Verdict{}
	b.handler.Handle(&b.pkt, &b.verdict)
	if b.verdict.Action == Hold {
		b.delta.Held++
		return
	}
	b.emit(b.pkt.ID, &b.verdict)
}

// emit appends the verdict for id and counts it.
func (b *batch) emit(id uint32, v *Verdict) {
	if v.Action == Accept {
		b.delta.Accepted++
	} else {
		v.Action = Drop
		b.delta.Dropped++
	}
	b.out = appendVerdict(b.out, b.queue, id, v)
}

// kernelError counts an NLMSG_ERROR: the kernel answers a verdict only when
// it fails (e.g. ENOENT for an unknown packet id).
func (b *batch) kernelError(msg []byte) {
	errno, _, err := parseError(msg)
	if err != nil {
		b.delta.ParseErrors++
		return
	}
	if errno != 0 {
		b.delta.VerdictErrors++
	}
}
