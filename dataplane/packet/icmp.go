package packet

// icmpClass groups ICMP and ICMPv6 types by what Decode does with them.
type icmpClass uint8

const (
	icmpOtherType icmpClass = iota
	icmpEcho                // echo request or reply: the identifier is the flow
	icmpError               // an error that embeds the packet that caused it
)

// ICMP (RFC 792) and ICMPv6 (RFC 4443) types that Decode classifies.
const (
	icmpv4EchoReply       = 0
	icmpv4DestUnreachable = 3
	icmpv4EchoRequest     = 8
	icmpv4TimeExceeded    = 11
	icmpv4ParamProblem    = 12

	icmpv6DestUnreachable = 1
	icmpv6PacketTooBig    = 2
	icmpv6TimeExceeded    = 3
	icmpv6ParamProblem    = 4
	icmpv6EchoRequest     = 128
	icmpv6EchoReply       = 129
)

// icmpClassOf classifies ICMP type t of the IP family (4 or 6).
func icmpClassOf(family, t uint8) icmpClass {
	if family == 4 {
		switch t {
		case icmpv4EchoRequest, icmpv4EchoReply:
			return icmpEcho
		// RFC 792: destination unreachable, time exceeded and parameter
		// problem carry the internet header plus 64 bits of the datagram.
		case icmpv4DestUnreachable, icmpv4TimeExceeded, icmpv4ParamProblem:
			return icmpError
		}
		return icmpOtherType
	}
	switch t {
	case icmpv6EchoRequest, icmpv6EchoReply:
		return icmpEcho
	// RFC 4443 section 2.1: types 1-4 (destination unreachable, packet too
	// big, time exceeded, parameter problem) carry as much of the invoking
	// packet as fits.
	case icmpv6DestUnreachable, icmpv6PacketTooBig, icmpv6TimeExceeded, icmpv6ParamProblem:
		return icmpError
	}
	return icmpOtherType
}
