package liveness

import (
	"encoding/binary"
	"net/netip"
	"time"
)

// ipv4Packet wraps an ICMP message in an IPv4 header (no options) from src
// to dst, header checksum set.
func ipv4Packet(src, dst netip.Addr, msg []byte) []byte {
	b := make([]byte, ipv4MinHeader, ipv4MinHeader+len(msg))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(ipv4MinHeader+len(msg)))
	b[8], b[9] = 64, protoICMP
	s, d := src.As4(), dst.As4()
	copy(b[12:16], s[:])
	copy(b[16:20], d[:])
	binary.BigEndian.PutUint16(b[10:], checksum(b[:ipv4MinHeader], 0))
	return append(b, msg...)
}

// toReply turns the echo request msg into the matching reply in place
// (type, and the ICMP checksum; ICMPv6's is the kernel's).
func toReply(msg []byte, v6 bool) {
	if v6 {
		msg[0] = TypeEchoReply6
		return
	}
	msg[0] = TypeEchoReply4
	setICMPChecksum(msg)
}

// setICMPChecksum recomputes the ICMP checksum of msg.
func setICMPChecksum(msg []byte) {
	msg[2], msg[3] = 0, 0
	binary.BigEndian.PutUint16(msg[2:], checksum(msg, 0))
}

// icmpv6Checksum is the ICMPv6 checksum of msg from src to dst (RFC 4443
// section 2.3: over the pseudo-header of RFC 8200 section 8.1), for tests
// that forge what the kernel would compute.
func icmpv6Checksum(src, dst netip.Addr, msg []byte) uint16 {
	var ph [40]byte
	s, d := src.As16(), dst.As16()
	copy(ph[0:16], s[:])
	copy(ph[16:32], d[:])
	binary.BigEndian.PutUint32(ph[32:], uint32(len(msg)))
	ph[39] = 58
	var sum uint32
	for i := 0; i < len(ph); i += 2 {
		sum += uint32(ph[i])<<8 | uint32(ph[i+1])
	}
	return checksum(msg, sum)
}

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

var (
	a4 = netip.MustParseAddr("192.0.2.1")
	b4 = netip.MustParseAddr("192.0.2.2")
	c6 = netip.MustParseAddr("2001:db8::3")
	us = netip.MustParseAddr("192.0.2.100")
)
