package bpfpath

import (
	"encoding/binary"
	"math/rand/v2"
)

// Hand-built Ethernet frames for the differential test and the fuzz seeds.
// Builders fill the fields the program and the decoder read and leave
// checksums zero (neither verifies them).

const (
	etherIPv4 = 0x0800
	etherIPv6 = 0x86dd
	etherVLAN = 0x8100
	etherARP  = 0x0806

	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
	protoSCTP   = 132
)

// genFrame is a generated frame and the status the program must report
// for it; want 0 means only that it agrees with the decoder (a mutilated
// frame may or may not stay decidable).
type genFrame struct {
	frame []byte
	want  Status
	what  string
}

// frameGen draws frames from a seeded generator.
type frameGen struct{ rng *rand.Rand }

func (g frameGen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return b
}

func (g frameGen) pick(xs ...uint8) uint8 { return xs[g.rng.IntN(len(xs))] }

// ether prepends an Ethernet header of type etype to ip and appends pad
// bytes of trailer (Ethernet padding, which the IP length excludes).
func ether(etype uint16, ip []byte, pad []byte) []byte {
	f := make([]byte, 14, 14+len(ip)+len(pad))
	copy(f, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2})
	binary.BigEndian.PutUint16(f[12:], etype)
	f = append(f, ip...)
	return append(f, pad...)
}

// ipv4 builds an IPv4 header to testVIP4 with optLen (a multiple of 4, up
// to 40) bytes of random options, carrying l4; fragOff is the flags and
// offset word.
func (g frameGen) ipv4(proto uint8, optLen int, fragOff uint16, l4 []byte) []byte {
	hlen := 20 + optLen
	b := make([]byte, hlen, hlen+len(l4))
	b[0] = 0x40 | byte(hlen/4)
	b[1] = byte(g.rng.Uint32())
	binary.BigEndian.PutUint16(b[2:], uint16(hlen+len(l4)))
	binary.BigEndian.PutUint16(b[4:], uint16(g.rng.Uint32()))
	binary.BigEndian.PutUint16(b[6:], fragOff)
	b[8] = 64
	b[9] = proto
	copy(b[12:16], g.bytes(4))
	copy(b[16:20], testVIP4.AsSlice())
	copy(b[20:], g.bytes(optLen))
	return append(b, l4...)
}

// ipv6 builds an IPv6 header to testVIP6 with next header next, carrying
// rest.
func (g frameGen) ipv6(next uint8, rest []byte) []byte {
	b := make([]byte, 40, 40+len(rest))
	b[0] = 0x60 | byte(g.rng.IntN(16))
	copy(b[1:4], g.bytes(3))
	binary.BigEndian.PutUint16(b[4:], uint16(len(rest)))
	b[6] = next
	b[7] = 64
	copy(b[8:24], g.bytes(16))
	copy(b[24:40], testVIP6.AsSlice())
	return append(b, rest...)
}

// transport returns a TCP, UDP or SCTP header start (random ports, then
// random bytes) of at least 4 bytes.
func (g frameGen) transport() []byte { return g.bytes(4 + g.rng.IntN(40)) }

// icmp returns an ICMP message of type typ with random code, identifier
// and payload (at least 8 bytes).
func (g frameGen) icmp(typ uint8) []byte {
	b := g.bytes(8 + g.rng.IntN(40))
	b[0] = typ
	return b
}

// optLen draws an IPv4 options length: none half the time, else 4..40.
func (g frameGen) optLen() int {
	if g.rng.IntN(2) == 0 {
		return 0
	}
	return 4 * (1 + g.rng.IntN(10))
}

// pad draws Ethernet padding: none most of the time.
func (g frameGen) pad() []byte {
	if g.rng.IntN(4) != 0 {
		return nil
	}
	return g.bytes(1 + g.rng.IntN(30))
}

// decidable returns a frame the program decides: IPv4 or IPv6, TCP, UDP,
// SCTP or an echo.
func (g frameGen) decidable() genFrame {
	v6 := g.rng.IntN(2) == 0
	var proto uint8
	var l4 []byte
	switch g.rng.IntN(4) {
	case 0:
		proto, l4 = protoTCP, g.transport()
	case 1:
		proto, l4 = protoUDP, g.transport()
	case 2:
		proto, l4 = protoSCTP, g.transport()
	default:
		if v6 {
			proto, l4 = protoICMPv6, g.icmp(g.pick(128, 129))
		} else {
			proto, l4 = protoICMP, g.icmp(g.pick(8, 0))
		}
	}
	if v6 {
		return genFrame{ether(etherIPv6, g.ipv6(proto, l4), g.pad()), StatusDecided, "ipv6"}
	}
	// DF and the reserved bit do not make a fragment.
	flags := uint16(g.rng.IntN(4)) << 14
	return genFrame{ether(etherIPv4, g.ipv4(proto, g.optLen(), flags, l4), g.pad()), StatusDecided, "ipv4"}
}

// punted returns a well-formed frame the program punts, with the reason.
func (g frameGen) punted() genFrame {
	opt := g.optLen()
	switch g.rng.IntN(12) {
	case 11: // a decidable frame to another destination
		f := g.decidable()
		ip := f.frame[14:]
		if ip[0]>>4 == 4 {
			copy(ip[16:20], g.bytes(4))
		} else {
			copy(ip[24:40], g.bytes(16))
		}
		return genFrame{f.frame, StatusPuntNotVIP, "not a VIP"}
	case 0: // IPv4 first fragment (more fragments) or later fragment
		frag := uint16(0x2000)
		if g.rng.IntN(2) == 0 {
			frag = uint16(1 + g.rng.IntN(0x1fff))
		}
		return genFrame{ether(etherIPv4, g.ipv4(g.pick(protoTCP, protoUDP, protoICMP), opt, frag, g.transport()), nil), StatusPuntFragment, "ipv4 fragment"}
	case 1: // IPv6 fragment header, first or later fragment
		fh := g.bytes(8)
		fh[0] = g.pick(protoTCP, protoUDP)
		return genFrame{ether(etherIPv6, g.ipv6(44, append(fh, g.transport()...)), nil), StatusPuntFragment, "ipv6 fragment"}
	case 2: // IPv6 extension headers
		ext := make([]byte, 8)
		ext[0] = protoTCP
		ext[2], ext[3] = 1, 4 // PadN
		return genFrame{ether(etherIPv6, g.ipv6(g.pick(0, 43, 51, 60), append(ext, g.transport()...)), nil), StatusPuntIPv6Extension, "ipv6 extension"}
	case 3: // ICMP errors
		return genFrame{ether(etherIPv4, g.ipv4(protoICMP, opt, 0, g.icmp(g.pick(3, 11, 12))), nil), StatusPuntICMPError, "icmp error"}
	case 4:
		return genFrame{ether(etherIPv6, g.ipv6(protoICMPv6, g.icmp(g.pick(1, 2, 3, 4))), nil), StatusPuntICMPError, "icmpv6 error"}
	case 5: // other ICMP types, and each ICMP in the other family
		return genFrame{ether(etherIPv4, g.ipv4(g.pick(protoICMP, protoICMPv6), opt, 0, g.icmp(g.pick(5, 13, 128))), nil), StatusPuntProtocol, "ipv4 icmp other"}
	case 6:
		return genFrame{ether(etherIPv6, g.ipv6(g.pick(protoICMPv6, protoICMP), g.icmp(g.pick(133, 135, 8))), nil), StatusPuntProtocol, "ipv6 icmp other"}
	case 7: // other protocols (GRE, ESP, OSPF, no next header)
		return genFrame{ether(etherIPv6, g.ipv6(g.pick(47, 50, 89, 59), g.transport()), nil), StatusPuntProtocol, "ipv6 other protocol"}
	case 8:
		return genFrame{ether(etherIPv4, g.ipv4(g.pick(47, 50, 89, 0), opt, 0, g.transport()), nil), StatusPuntProtocol, "ipv4 other protocol"}
	case 9: // a VLAN tag before IPv4, ARP
		ip := g.ipv4(protoTCP, opt, 0, g.transport())
		return genFrame{ether(etherVLAN, append([]byte{0, 5, 8, 0}, ip...), nil), StatusPuntNotIP, "vlan"}
	default:
		return genFrame{ether(etherARP, g.bytes(28), nil), StatusPuntNotIP, "arp"}
	}
}

// malformed returns a frame with one header field broken, which the
// program punts as malformed.
func (g frameGen) malformed() genFrame {
	ok := g.decidable()
	f := ok.frame
	v6 := binary.BigEndian.Uint16(f[12:]) == etherIPv6
	ip := f[14:]
	bad := genFrame{frame: f, want: StatusPuntMalformed}
	switch g.rng.IntN(5) {
	case 0: // IP version unlike the Ethernet type
		ip[0] = byte(g.pick(0, 1, 5, 7, 15))<<4 | ip[0]&0x0f
		if g.rng.IntN(2) == 0 {
			ip[0] = ip[0]&0x0f | map[bool]byte{true: 0x40, false: 0x60}[v6]
		}
		bad.what = "version"
	case 1: // the IP length beyond the frame
		if v6 {
			binary.BigEndian.PutUint16(ip[4:], uint16(len(ip)-40+1+g.rng.IntN(100)))
		} else {
			binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+1+g.rng.IntN(100)))
		}
		bad.what = "length beyond the frame"
	case 2: // the IP length short of the ports or ICMP header
		if v6 {
			binary.BigEndian.PutUint16(ip[4:], uint16(g.rng.IntN(4)))
		} else {
			hlen := int(ip[0]&0x0f) * 4
			binary.BigEndian.PutUint16(ip[2:], uint16(hlen+g.rng.IntN(4)))
		}
		bad.what = "length short of the ports"
	case 3: // IPv4 header length below 5 words, or total length below it
		if v6 {
			return g.malformed()
		}
		if g.rng.IntN(2) == 0 {
			ip[0] = 0x40 | byte(g.rng.IntN(5))
		} else {
			binary.BigEndian.PutUint16(ip[2:], uint16(g.rng.IntN(int(ip[0]&0x0f)*4)))
		}
		bad.what = "ipv4 header length"
	default: // the frame ends inside the IP header
		n := 40
		if !v6 {
			n = int(ip[0]&0x0f) * 4
		}
		bad.frame = f[:14+g.rng.IntN(n)]
		bad.what = "truncated header"
	}
	return bad
}

// mutilated returns a decidable frame cut short or with random bytes
// changed: the program must agree with the decoder, whatever that says.
func (g frameGen) mutilated() genFrame {
	f := g.decidable().frame
	if g.rng.IntN(2) == 0 {
		return genFrame{f[:14+g.rng.IntN(len(f)-13)], 0, "cut"}
	}
	for range 1 + g.rng.IntN(3) {
		f[14+g.rng.IntN(len(f)-14)] = byte(g.rng.Uint32())
	}
	return genFrame{f, 0, "flipped"}
}

// next draws a frame: half decidable, the rest punted, malformed or
// mutilated.
func (g frameGen) next() genFrame {
	switch n := g.rng.IntN(10); {
	case n < 5:
		return g.decidable()
	case n < 7:
		return g.punted()
	case n < 8:
		return g.malformed()
	default:
		return g.mutilated()
	}
}
