package nfqueue

// Packet is one queued packet as parsed from an NFQNL_MSG_PACKET message.
// The loop reuses one Packet for every message: Payload aliases the receive
// buffer, and nothing in it may be kept after Handle returns.
type Packet struct {
	// ID is the kernel's packet id, unique within the queue; a verdict
	// (now or through (*Queue).Release) names the packet by it.
	ID uint32
	// HwProtocol is the link-layer protocol (an EtherType, e.g. 0x0800 for
	// IPv4 and 0x86dd for IPv6), in host byte order.
	HwProtocol uint16
	// Hook is the netfilter hook the packet was queued from (NF_INET_*).
	Hook uint8
	// Mark is the packet's fwmark when it was queued.
	Mark uint32
	// InIfindex and OutIfindex are the input and output interfaces, 0 when
	// not known at the hook.
	InIfindex, OutIfindex uint32
	// SkbInfo holds the Skb* flags the kernel reported (0 when absent).
	SkbInfo uint32
	// Payload is the packet from its network header on, truncated to the
	// queue's copy range.
	Payload []byte
	// Length is the packet's full length; larger than len(Payload) when the
	// copy range truncated it.
	Length int
}

// Truncated says whether Payload holds less than the whole packet.
func (p *Packet) Truncated() bool { return p.Length > len(p.Payload) }

// Action is what a verdict does with a packet.
type Action uint8

const (
	// Drop discards the packet. It is the zero value: a Verdict the Handler
	// does not touch drops the packet (fail closed).
	Drop Action = iota
	// Accept lets the packet continue through netfilter, with the new mark
	// when Verdict.SetMark is set.
	Accept
	// Hold sends no verdict now: the packet waits in the kernel queue until
	// (*Queue).Release gives its verdict. Held packets occupy the kernel
	// queue (see WithQueueMaxLen) and are dropped when the queue closes.
	Hold
)

// String names the action.
func (a Action) String() string {
	switch a {
	case Drop:
		return "drop"
	case Accept:
		return "accept"
	case Hold:
		return "hold"
	}
	return "invalid"
}

// Verdict is the Handler's decision on one packet. The loop zeroes it
// before every call.
type Verdict struct {
	Action Action
	// Mark is the fwmark to give the packet when SetMark is true (Accept
	// only; ignored for Drop).
	Mark    uint32
	SetMark bool
}

// Handler decides on packets. Handle is called synchronously from the
// queue's reader goroutine, one packet at a time; it must not keep p or
// p.Payload after returning, and must not block for long (the whole batch
// waits for it).
type Handler interface {
	Handle(p *Packet, v *Verdict)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(p *Packet, v *Verdict)

// Handle calls f(p, v).
func (f HandlerFunc) Handle(p *Packet, v *Verdict) { f(p, v) }
