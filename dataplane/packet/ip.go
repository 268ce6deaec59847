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

// parse fills h from the IP packet at the start of b. gso says the kernel
// flagged the packet as a GSO/GRO aggregate, whose length field may be 0.
func (h *ipHeader) parse(b []byte, gso bool) error {
	if len(b) == 0 {
		return ErrTruncated
	}
	switch b[0] >> 4 {
	case 4:
		return h.parseIPv4(b, gso)
	case 6:
		return h.parseIPv6(b, gso)
	}
	return ErrBadVersion
}

func (h *ipHeader) parseIPv4(b []byte, gso bool) error {
	if len(b) < ipv4MinHeaderLen {
		return ErrTruncated
	}
	headerLen := int(b[0]&0x0f) * 4
	if headerLen < ipv4MinHeaderLen {
		return ErrBadHeaderLength
	}
	totalLen := int(binary.BigEndian.Uint16(b[2:4]))
	if totalLen == 0 && gso && model.Protocol(b[9]) == model.ProtoTCP {
		// A TCP aggregate over 64 KiB (IPv4 BIG TCP) states no length:
		// its length is the packet's, as the kernel's iph_totlen takes it.
		totalLen = len(b)
	}
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

func (h *ipHeader) parseIPv6(b []byte, gso bool) error {
	if len(b) < ipv6HeaderLen {
		return ErrTruncated
	}
	end, err := ipv6End(b, gso)
	if err != nil {
		return err
	}
	h.family = 6
	return h.walkIPv6Extensions(b[:end], b[6], ipv6HeaderLen)
}

// ipv6End returns where the IPv6 packet b ends, as the kernel's receive
// path (ip6_rcv_core) takes it before netfilter sees the packet:
//   - a non-zero payload length counts (a longer one means b was cut);
//   - zero with a hop-by-hop header: a jumbogram (RFC 2675), whose Jumbo
//     Payload option states the length; without that option the kernel
//     keeps the whole packet;
//   - zero in a GSO aggregate (BIG TCP without a hop-by-hop header): the
//     packet's length;
//   - zero otherwise: no payload (the kernel trims the packet to its header).
func ipv6End(b []byte, gso bool) (int, error) {
	if payloadLen := int(binary.BigEndian.Uint16(b[4:6])); payloadLen != 0 {
		return min(len(b), ipv6HeaderLen+payloadLen), nil
	}
	switch {
	case b[6] == extHopByHop:
		jumbo, found, err := jumboPayloadLength(b[ipv6HeaderLen:])
		if err != nil || !found {
			return len(b), err
		}
		return int(min(uint64(len(b)), ipv6HeaderLen+uint64(jumbo))), nil
	case gso:
		return len(b), nil
	}
	return ipv6HeaderLen, nil
}

// Jumbo Payload option (RFC 2675 section 2).
const (
	optPad1       = 0
	optJumbo      = 0xc2
	optJumboLen   = 4
	jumboMinValue = 65536
)

// jumboPayloadLength looks for the Jumbo Payload option in the hop-by-hop
// header at the start of hbh. RFC 2675 section 3: the option must be 4
// bytes long, 4n+2 aligned, and state a length above 65535; anything else
// is ErrBadPayloadLength (the kernel drops it with a Parameter Problem).
func jumboPayloadLength(hbh []byte) (length uint32, found bool, err error) {
	if len(hbh) < ipv6MinExtLen {
		return 0, false, ErrTruncated
	}
	hdrLen := (int(hbh[1]) + 1) * 8
	if len(hbh) < hdrLen {
		return 0, false, ErrTruncated
	}
	for off := 2; off < hdrLen; {
		typ := hbh[off]
		if typ == optPad1 {
			off++
			continue
		}
		if off+2 > hdrLen || off+2+int(hbh[off+1]) > hdrLen {
			return 0, false, ErrTruncated
		}
		optLen := int(hbh[off+1])
		if typ == optJumbo {
			if optLen != optJumboLen || (ipv6HeaderLen+off)%4 != 2 {
				return 0, false, ErrBadPayloadLength
			}
			length = binary.BigEndian.Uint32(hbh[off+2:])
			if length < jumboMinValue {
				return 0, false, ErrBadPayloadLength
			}
			return length, true, nil
		}
		off += 2 + optLen
	}
	return 0, false, nil
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
