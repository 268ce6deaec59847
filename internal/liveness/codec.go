package liveness

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// The echo messages of ICMP (RFC 792, "Echo or Echo Reply Message") and
// ICMPv6 (RFC 4443 sections 4.1 and 4.2) share one layout:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Type      |     Code      |          Checksum             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           Identifier          |        Sequence Number        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Data ...
//	+-+-+-+-+-
//
// Type: ICMP 8 request, 0 reply; ICMPv6 128 request, 129 reply. Code 0.
// The reply carries the request's identifier, sequence number and data.
// Checksum: ICMP, the ones' complement of the ones' complement sum of the
// ICMP message (RFC 792); ICMPv6, the same over an IPv6 pseudo-header and
// the message (RFC 4443 section 2.3), which the kernel computes on send and
// verifies on receive for raw ICMPv6 sockets (RFC 3542 section 3.1; Linux
// sets the checksum offset 2 on every IPPROTO_ICMPV6 raw socket), so this
// codec leaves it to the kernel.
//
// A raw ICMPv4 socket delivers the IPv4 header before the message:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Version|  IHL  |Type of Service|          Total Length         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|         Identification        |Flags|      Fragment Offset    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Time to Live |    Protocol   |         Header Checksum       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                       Source Address                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Destination Address                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Options                    |    Padding    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// (the kernel has reassembled fragments and verified the header checksum);
// a raw ICMPv6 socket delivers the message alone, the source in the socket
// address.

// ICMP and ICMPv6 echo types.
const (
	TypeEchoReply4   = 0
	TypeEchoRequest4 = 8
	TypeEchoRequest6 = 128
	TypeEchoReply6   = 129
)

const (
	echoHeaderLen = 8
	ipv4MinHeader = 20
	protoICMP     = 1
)

// Decode errors. Echo.Decode* return exactly one of these (compare with ==).
var (
	ErrTruncated   = errors.New("liveness: truncated")
	ErrNotIPv4     = errors.New("liveness: not an IPv4 packet")
	ErrBadHeader   = errors.New("liveness: bad IPv4 header or total length")
	ErrNotICMP     = errors.New("liveness: not ICMP")
	ErrFragment    = errors.New("liveness: IPv4 fragment")
	ErrNotEcho     = errors.New("liveness: not an echo request or reply")
	ErrBadChecksum = errors.New("liveness: bad ICMP checksum")
)

// Echo is a decoded echo request or reply. Decode* overwrite every field,
// never allocate, never panic and never read outside their input; Data
// aliases the input.
type Echo struct {
	V6       bool
	Type     uint8
	Code     uint8
	ID       uint16
	Seq      uint16
	Src, Dst netip.Addr // from the IPv4 header; unset for ICMPv6 (no header)
	Data     []byte
}

// IsReply reports whether e is an echo reply of its family.
func (e *Echo) IsReply() bool {
	if e.V6 {
		return e.Type == TypeEchoReply6
	}
	return e.Type == TypeEchoReply4
}

// DecodeIPv4 decodes b, an IPv4 packet as a raw ICMPv4 socket delivers it.
// The IPv4 total length bounds the message (bytes after it are ignored; a
// total length beyond b is ErrBadHeader). The ICMP checksum is verified:
// the kernel hands raw sockets ICMP messages before checking it.
func (e *Echo) DecodeIPv4(b []byte) error {
	*e = Echo{}
	if len(b) < ipv4MinHeader {
		return ErrTruncated
	}
	if b[0]>>4 != 4 {
		return ErrNotIPv4
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < ipv4MinHeader || total < ihl || total > len(b) {
		return ErrBadHeader
	}
	if b[9] != protoICMP {
		return ErrNotICMP
	}
	if binary.BigEndian.Uint16(b[6:8])&0x3fff != 0 { // MF or an offset
		return ErrFragment
	}
	e.Src = netip.AddrFrom4([4]byte(b[12:16]))
	e.Dst = netip.AddrFrom4([4]byte(b[16:20]))
	msg := b[ihl:total]
	if err := e.decodeMessage(msg, false); err != nil {
		return err
	}
	if checksum(msg, 0) != 0 {
		return ErrBadChecksum
	}
	return nil
}

// DecodeICMPv6 decodes b, an ICMPv6 message as a raw ICMPv6 socket delivers
// it (the kernel has verified its checksum). Src and Dst stay unset.
func (e *Echo) DecodeICMPv6(b []byte) error {
	*e = Echo{}
	return e.decodeMessage(b, true)
}

func (e *Echo) decodeMessage(msg []byte, v6 bool) error {
	e.V6 = v6
	if len(msg) < echoHeaderLen {
		return ErrTruncated
	}
	e.Type, e.Code = msg[0], msg[1]
	switch {
	case !v6 && (e.Type == TypeEchoReply4 || e.Type == TypeEchoRequest4):
	case v6 && (e.Type == TypeEchoReply6 || e.Type == TypeEchoRequest6):
	default:
		return ErrNotEcho
	}
	e.ID = binary.BigEndian.Uint16(msg[4:6])
	e.Seq = binary.BigEndian.Uint16(msg[6:8])
	e.Data = msg[echoHeaderLen:]
	return nil
}

// AppendEchoRequest appends an echo request message (no IP header) to b
// and returns the extended slice; it allocates only if b lacks capacity.
// The ICMP checksum is computed; the ICMPv6 checksum is left zero for the
// kernel to fill.
func AppendEchoRequest(b []byte, v6 bool, id, seq uint16, data []byte) []byte {
	start := len(b)
	typ := uint8(TypeEchoRequest4)
	if v6 {
		typ = TypeEchoRequest6
	}
	b = append(b, typ, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, id)
	b = binary.BigEndian.AppendUint16(b, seq)
	b = append(b, data...)
	if !v6 {
		binary.BigEndian.PutUint16(b[start+2:], checksum(b[start:], 0))
	}
	return b
}

// checksum is the Internet checksum (RFC 1071) of b added to the partial
// sum initial: zero over a message whose checksum field is right.
func checksum(b []byte, initial uint32) uint16 {
	sum := initial
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
