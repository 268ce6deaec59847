package packet

import (
	"encoding/binary"
	"net/netip"
)

// Hand-built test packets. Builders fill the fields Decode reads and leave
// checksums zero (Decode does not verify them).

// v4 describes an IPv4 header to build.
type v4 struct {
	src, dst   string
	proto      uint8
	id         uint16
	moreFrags  bool
	dontFrag   bool
	fragOffset uint16 // in 8-byte units
	options    []byte // padded to a multiple of 4 by the builder
	ihl        int    // header length in words; 0 means computed
	totalLen   int    // 0 means computed; -1 means computed + 1000 (truncated packet); -2 means zero (BIG TCP)
}

func ipv4(h v4, payload []byte) []byte {
	opts := append([]byte(nil), h.options...)
	for len(opts)%4 != 0 {
		opts = append(opts, 0) // end-of-options padding
	}
	hdrLen := 20 + len(opts)
	b := make([]byte, hdrLen, hdrLen+len(payload))
	ihl := h.ihl
	if ihl == 0 {
		ihl = hdrLen / 4
	}
	b[0] = 0x40 | byte(ihl&0x0f)
	total := hdrLen + len(payload)
	switch {
	case h.totalLen > 0:
		total = h.totalLen
	case h.totalLen == -1:
		total += 1000
	case h.totalLen == -2:
		total = 0
	}
	binary.BigEndian.PutUint16(b[2:], uint16(total))
	binary.BigEndian.PutUint16(b[4:], h.id)
	flags := h.fragOffset & 0x1fff
	if h.moreFrags {
		flags |= 0x2000
	}
	if h.dontFrag {
		flags |= 0x4000
	}
	binary.BigEndian.PutUint16(b[6:], flags)
	b[8] = 64
	b[9] = h.proto
	src, dst := netip.MustParseAddr(h.src).As4(), netip.MustParseAddr(h.dst).As4()
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	copy(b[20:], opts)
	return append(b, payload...)
}

// ext is one IPv6 extension header; its first byte (next header) is filled
// in by ipv6.
type ext struct {
	num  uint8
	body []byte
}

// optsExt builds a hop-by-hop (0), routing (43) or destination options (60)
// header of (units+1)*8 bytes.
func optsExt(num uint8, units int) ext {
	b := make([]byte, (units+1)*8)
	b[1] = byte(units)
	b[2] = 1 // PadN option covering the rest
	b[3] = byte(len(b) - 4)
	return ext{num, b}
}

// jumboExt builds a hop-by-hop header holding a Jumbo Payload option
// (RFC 2675) of length n, at its aligned place (offset 2 of the header,
// 4n+2 from the IPv6 header's start) or misaligned after a Pad1.
func jumboExt(n uint32, misaligned bool) ext {
	if !misaligned {
		b := []byte{0, 0, 0xc2, 4, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[4:], n)
		return ext{0, b}
	}
	b := []byte{0, 1, 0, 0xc2, 4, 0, 0, 0, 0, 1, 5, 0, 0, 0, 0, 0} // Pad1, jumbo, PadN
	binary.BigEndian.PutUint32(b[5:], n)
	return ext{0, b}
}

func fragExt(offset uint16, more bool, id uint32) ext {
	b := make([]byte, 8)
	v := offset << 3
	if more {
		v |= 1
	}
	binary.BigEndian.PutUint16(b[2:], v)
	binary.BigEndian.PutUint32(b[4:], id)
	return ext{44, b}
}

// ahExt builds an authentication header of (words+2)*4 bytes.
func ahExt(words int) ext {
	b := make([]byte, (words+2)*4)
	b[1] = byte(words)
	return ext{51, b}
}

// v6 describes an IPv6 header and its extension headers to build.
type v6 struct {
	src, dst   string
	exts       []ext
	proto      uint8
	payloadLen int // 0 means computed; -1 means computed + 1000 (truncated); -2 means zero (jumbo)
}

func ipv6(h v6, payload []byte) []byte {
	b := make([]byte, 40)
	b[0] = 0x60
	b[7] = 64
	src, dst := netip.MustParseAddr(h.src).As16(), netip.MustParseAddr(h.dst).As16()
	copy(b[8:], src[:])
	copy(b[24:], dst[:])
	nextField := 6
	for _, e := range h.exts {
		b[nextField] = e.num
		nextField = len(b)
		b = append(b, e.body...)
	}
	b[nextField] = h.proto
	b = append(b, payload...)
	plen := len(b) - 40
	switch {
	case h.payloadLen > 0:
		plen = h.payloadLen
	case h.payloadLen == -1:
		plen += 1000
	case h.payloadLen == -2:
		plen = 0
	}
	binary.BigEndian.PutUint16(b[4:], uint16(plen))
	return b
}

// ports builds a transport header of n bytes starting with the two ports.
func ports(src, dst uint16, n int) []byte {
	b := make([]byte, n)
	binary.BigEndian.PutUint16(b[0:], src)
	binary.BigEndian.PutUint16(b[2:], dst)
	for i := 4; i < n; i++ {
		b[i] = byte(i)
	}
	return b
}

func tcp(src, dst uint16) []byte  { b := ports(src, dst, 20); b[12] = 5 << 4; return b }
func udp(src, dst uint16) []byte  { return ports(src, dst, 8) }
func sctp(src, dst uint16) []byte { return ports(src, dst, 12) }

// icmp builds an ICMP/ICMPv6 header (type, code, checksum, 4 bytes rest)
// followed by body; rest holds the echo identifier in its first two bytes.
func icmp(typ, code uint8, rest uint32, body []byte) []byte {
	b := make([]byte, 8, 8+len(body))
	b[0], b[1] = typ, code
	binary.BigEndian.PutUint32(b[4:], rest)
	return append(b, body...)
}

func echo(typ uint8, id, seq uint16) []byte {
	return icmp(typ, 0, uint32(id)<<16|uint32(seq), []byte("ping data"))
}

// cut returns the first n bytes of b (a copy).
func cut(b []byte, n int) []byte { return append([]byte(nil), b[:n]...) }

func concat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}
