package packet

import (
	"encoding/binary"
	"net/netip"

	"github.com/sllbrd/sllbrd/model"
)

// MaxExtensionHeaders bounds the IPv6 extension header walk: a chain with
// more headers than this is ErrTooManyExtensionHeaders.
const MaxExtensionHeaders = 8

const (
	ipv4MinHeaderLen = 20
	ipv6HeaderLen    = 40
	ipv6FragmentLen  = 8
	ipv6MinExtLen    = 8 // every IPv6 extension header is at least 8 bytes
)

// IPv6 extension header numbers that Decode walks.
const (
	extHopByHop    = 0
	extRouting     = 43
	extFragment    = 44
	extAuthHeader  = 51
	extDestOptions = 60
)

// fragmentPosition says where in its datagram an IP packet lies.
type fragmentPosition uint8

const (
	notFragment fragmentPosition = iota
	firstFragment
	laterFragment
)

// ipHeader is an IP header and its IPv6 extension headers, walked. It
// holds offsets rather than slices and addresses to stay small: Decode
// copies only what it needs into the Packet.
type ipHeader struct {
	family   uint8
	proto    model.Protocol // the transport protocol (next header after the walk)
	fragment fragmentPosition
	fragID   uint32
	// payload is b[payloadStart:payloadEnd]: what follows the IP headers,
	// cut to the length the header states if the buffer is longer. Unset
	// for a later fragment.
	payloadStart, payloadEnd int
}

// addrs returns the source and destination address of the IP packet b that
// h was parsed from.
func (h *ipHeader) addrs(b []byte) (src, dst netip.Addr) {
	if h.family == 4 {
		return netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20]))
	}
	return netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
}

// payload returns the bytes after the IP headers of b, nil for a later fragment.
func (h *ipHeader) payload(b []byte) []byte {
	if h.fragment == laterFragment {
		return nil
	}
	return b[h.payloadStart:h.payloadEnd]
}

// parse fills h from the IP packet at the start of b.
func (h *ipHeader) parse(b []byte) error {
	if len(b) == 0 {
		return ErrTruncated
	}
	switch b[0] >> 4 {
	case 4:
		return h.parseIPv4(b)
	case 6:
		return h.parseIPv6(b)
	}
	return ErrBadVersion
}

func (h *ipHeader) parseIPv4(b []byte) error {
	if len(b) < ipv4MinHeaderLen {
		return ErrTruncated
	}
	headerLen := int(b[0]&0x0f) * 4
	if headerLen < ipv4MinHeaderLen {
		return ErrBadHeaderLength
	}
	totalLen := int(binary.BigEndian.Uint16(b[2:4]))
	if totalLen < headerLen {
		return ErrBadTotalLength
	}
	if len(b) < headerLen {
		return ErrTruncated
	}
	h.family = 4
	h.proto = model.Protocol(b[9])
	flagsOffset := binary.BigEndian.Uint16(b[6:8])
	const moreFragments, offsetMask = 0x2000, 0x1fff
	switch {
	case flagsOffset&offsetMask != 0:
		h.fragment = laterFragment
	case flagsOffset&moreFragments != 0:
		h.fragment = firstFragment
	}
	if h.fragment != notFragment {
		h.fragID = uint32(binary.BigEndian.Uint16(b[4:6]))
	}
	h.payloadStart, h.payloadEnd = headerLen, min(totalLen, len(b))
	return nil
}

func (h *ipHeader) parseIPv6(b []byte) error {
	if len(b) < ipv6HeaderLen {
		return ErrTruncated
	}
	end := len(b)
	// A zero payload length means a jumbogram (RFC 2675); trust the buffer.
	if payloadLen := int(binary.BigEndian.Uint16(b[4:6])); payloadLen != 0 {
		end = min(end, ipv6HeaderLen+payloadLen)
	}
	h.family = 6
	return h.walkIPv6Extensions(b[:end], b[6], ipv6HeaderLen)
}

// walkIPv6Extensions follows the extension header chain of the IPv6 packet
// b (cut to its stated length) starting with header number next at offset
// off, and sets h.proto, the payload offsets and the fragment fields.
func (h *ipHeader) walkIPv6Extensions(b []byte, next uint8, off int) error {
	seenFragment := false
	for walked := 0; ; walked++ {
		switch next {
		case extHopByHop, extRouting, extFragment, extAuthHeader, extDestOptions:
		default:
			h.proto = model.Protocol(next)
			h.payloadStart, h.payloadEnd = off, len(b)
			return nil
		}
		if walked == MaxExtensionHeaders {
			return ErrTooManyExtensionHeaders
		}
		ext := b[off:]
		if len(ext) < ipv6MinExtLen {
			return ErrTruncated
		}
		extLen := (int(ext[1]) + 1) * 8
		switch next {
		case extAuthHeader:
			extLen = (int(ext[1]) + 2) * 4
		case extFragment:
			extLen = ipv6FragmentLen
			if seenFragment {
				return ErrBadFragment
			}
			seenFragment = true
			h.parseIPv6Fragment(ext)
			if h.fragment == laterFragment {
				h.proto = model.Protocol(ext[0])
				return nil
			}
		}
		if len(ext) < extLen {
			return ErrTruncated
		}
		next = ext[0]
		off += extLen
	}
}

// parseIPv6Fragment reads a fragment header (at least 8 bytes). An atomic
// fragment (offset 0, no more fragments, RFC 6946) is not a fragment.
func (h *ipHeader) parseIPv6Fragment(ext []byte) {
	offsetFlags := binary.BigEndian.Uint16(ext[2:4])
	const moreFragments, offsetMask = 0x0001, 0xfff8
	switch {
	case offsetFlags&offsetMask != 0:
		h.fragment = laterFragment
	case offsetFlags&moreFragments != 0:
		h.fragment = firstFragment
	default:
		return
	}
	h.fragID = binary.BigEndian.Uint32(ext[4:8])
}
