package packet

import (
	"net/netip"

	"github.com/sllbrd/sllbrd/model"
)

// Kind says what a decoded packet is, for the decision that follows.
type Kind uint8

const (
	// KindInvalid: the packet could not be decoded (see Packet.Err).
	KindInvalid Kind = iota
	// KindTransport: an unfragmented TCP, UDP or SCTP packet; ports are set.
	KindTransport
	// KindFirstFragment: the first fragment (offset 0, more fragments) of a
	// datagram; FragID identifies the datagram. Ports are set for TCP, UDP and
	// SCTP, hold the identifier for an ICMP/ICMPv6 echo (as in KindICMPEcho)
	// and are zero for other protocols.
	KindFirstFragment
	// KindLaterFragment: a non-first fragment; no ports, FragID identifies the
	// datagram with Src and Dst (and, in IPv4 only, Proto). Proto is the
	// IPv4 protocol or the IPv6 fragment header's next header.
	KindLaterFragment
	// KindICMPError: an ICMP/ICMPv6 error (unreachable, time exceeded,
	// parameter problem; ICMPv6 packet too big) whose embedded packet was decoded. The
	// flow fields (Src, Dst, Proto, ports, L4) describe the embedded packet
	// reversed, i.e. the flow as the LB saw it going towards the target.
	KindICMPError
	// KindICMPEcho: an ICMP/ICMPv6 echo request or reply; SrcPort and DstPort
	// both hold the echo identifier.
	KindICMPEcho
	// KindOther: a well-formed packet of another protocol or ICMP type, or an
	// ICMP error whose embedded packet names no flow (a later fragment, or
	// itself an ICMP error). The flow fields are the packet's own.
	KindOther
)

// String returns a short lower-case name for k, usable as a metric label.
func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindTransport:
		return "transport"
	case KindFirstFragment:
		return "first-fragment"
	case KindLaterFragment:
		return "later-fragment"
	case KindICMPError:
		return "icmp-error"
	case KindICMPEcho:
		return "icmp-echo"
	case KindOther:
		return "other"
	}
	return "unknown"
}

// Packet is the decoded view of one IP packet. It is owned by the caller and
// reused: Decode overwrites every field. L4 aliases the input buffer.
type Packet struct {
	Kind   Kind
	Family uint8 // 4 or 6
	Proto  model.Protocol

	// The flow. For KindICMPError these come from the embedded packet with
	// source and destination swapped.
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16

	// L4 is the transport header and what follows of it in the buffer (for
	// KindICMPError, of the embedded packet; possibly truncated): the bytes
	// after the last IP header, cut to the length the IP header states.
	// ByteMatches read from it. Nil for KindLaterFragment (and may be nil
	// for KindInvalid).
	L4 []byte

	// Fragment identity (KindFirstFragment, KindLaterFragment): the outer
	// packet's own source and destination and its identification field
	// (16 bits in IPv4, 32 in IPv6).
	FragID uint32

	// ICMP type and code, for KindICMPError, KindICMPEcho, KindOther ICMP and
	// a KindFirstFragment of ICMP (of the outer message, never the embedded one).
	ICMPType, ICMPCode uint8

	// Err says why Kind is KindInvalid: one of the Err* sentinels of this
	// package (see Errors), never allocated. Nil for every other Kind.
	Err error
}
