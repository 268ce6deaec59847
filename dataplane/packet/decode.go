package packet

import (
	"encoding/binary"

	"github.com/sllbrd/sllbrd/model"
)

const (
	portsLen          = 4 // source and destination port, TCP/UDP/SCTP alike
	icmpHeaderLen     = 8 // type, code, checksum, and 4 bytes of identifier/unused/MTU
	embeddedMinL4Len  = 8 // what RFC 792 and RFC 4443 guarantee of the embedded transport header
	icmpEchoIDOffset  = 4
	icmpEmbeddedStart = icmpHeaderLen
)

// Decode decodes the raw IP packet b (starting at the IP header, as nfqueue
// delivers it) into p, overwriting every field of p. It never allocates,
// never panics and never reads outside b; p.L4 aliases b.
func (p *Packet) Decode(b []byte) { p.decode(b, false) }

// DecodeGSO is Decode for a packet the kernel flagged as a GSO/GRO
// aggregate (nfqueue's NFQA_SKB_GSO): an IPv4 TCP packet with total length
// 0 or an IPv6 packet with payload length 0 (BIG TCP, over 64 KiB) is then
// as long as the packet itself.
func (p *Packet) DecodeGSO(b []byte) { p.decode(b, true) }

func (p *Packet) decode(b []byte, gso bool) {
	*p = Packet{}
	var h ipHeader
	if err := h.parse(b, gso); err != nil {
		p.fail(err)
		return
	}
	p.Family, p.Proto = h.family, h.proto
	p.Src, p.Dst = h.addrs(b)
	switch h.fragment {
	case laterFragment:
		p.Kind, p.FragID = KindLaterFragment, h.fragID
	case firstFragment:
		p.FragID = h.fragID
		p.decodeFirstFragment(h.payload(b))
	default:
		p.decodeTransport(h.payload(b))
	}
}

func (p *Packet) fail(err error) {
	p.Kind, p.Err = KindInvalid, err
}

// decodeTransport decodes the transport header l4 of an unfragmented packet.
func (p *Packet) decodeTransport(l4 []byte) {
	p.L4 = l4
	switch {
	case hasPorts(p.Proto):
		if len(l4) < portsLen {
			p.fail(ErrTruncated)
			return
		}
		p.Kind = KindTransport
		p.SrcPort = binary.BigEndian.Uint16(l4[0:2])
		p.DstPort = binary.BigEndian.Uint16(l4[2:4])
	case isICMP(p.Family, p.Proto):
		p.decodeICMP(l4)
	default:
		p.Kind = KindOther
	}
}

// decodeFirstFragment decodes what the first fragment holds of its
// datagram's transport header: ports for TCP/UDP/SCTP, the identifier of an
// ICMP echo, nothing for other protocols.
func (p *Packet) decodeFirstFragment(l4 []byte) {
	p.Kind, p.L4 = KindFirstFragment, l4
	switch {
	case hasPorts(p.Proto):
		if len(l4) < portsLen {
			p.fail(ErrTruncated)
			return
		}
		p.SrcPort = binary.BigEndian.Uint16(l4[0:2])
		p.DstPort = binary.BigEndian.Uint16(l4[2:4])
	case isICMP(p.Family, p.Proto):
		if len(l4) < icmpHeaderLen {
			p.fail(ErrTruncated)
			return
		}
		p.ICMPType, p.ICMPCode = l4[0], l4[1]
		if icmpClassOf(p.Family, p.ICMPType) == icmpEcho {
			id := binary.BigEndian.Uint16(l4[icmpEchoIDOffset:])
			p.SrcPort, p.DstPort = id, id
		}
	}
}

// decodeICMP decodes the ICMP or ICMPv6 message l4 of an unfragmented packet.
func (p *Packet) decodeICMP(l4 []byte) {
	if len(l4) < icmpHeaderLen {
		p.fail(ErrTruncated)
		return
	}
	p.ICMPType, p.ICMPCode = l4[0], l4[1]
	switch icmpClassOf(p.Family, p.ICMPType) {
	case icmpEcho:
		id := binary.BigEndian.Uint16(l4[icmpEchoIDOffset:])
		p.Kind, p.SrcPort, p.DstPort = KindICMPEcho, id, id
	case icmpError:
		p.decodeICMPError(l4[icmpEmbeddedStart:])
	default:
		p.Kind = KindOther
	}
}

// decodeICMPError decodes the packet embedded in an ICMP error and sets the
// flow to it reversed. An embedded later fragment or ICMP error names no
// flow: the packet is then KindOther and keeps its outer flow fields.
func (p *Packet) decodeICMPError(embedded []byte) {
	if len(embedded) == 0 {
		p.fail(ErrTruncated)
		return
	}
	if embedded[0]>>4 != p.Family {
		p.fail(ErrBadVersion)
		return
	}
	var h ipHeader
	if err := h.parse(embedded, false); err != nil {
		p.fail(err)
		return
	}
	if h.fragment == laterFragment {
		p.Kind = KindOther
		return
	}
	l4 := h.payload(embedded)
	var srcPort, dstPort uint16
	switch {
	case hasPorts(h.proto):
		if len(l4) < embeddedMinL4Len {
			p.fail(ErrTruncated)
			return
		}
		srcPort = binary.BigEndian.Uint16(l4[0:2])
		dstPort = binary.BigEndian.Uint16(l4[2:4])
	case isICMP(h.family, h.proto):
		if len(l4) < embeddedMinL4Len {
			p.fail(ErrTruncated)
			return
		}
		switch icmpClassOf(h.family, l4[0]) {
		case icmpError:
			p.Kind = KindOther
			return
		case icmpEcho:
			srcPort = binary.BigEndian.Uint16(l4[icmpEchoIDOffset:])
			dstPort = srcPort
		}
	}
	src, dst := h.addrs(embedded)
	p.Kind, p.Proto, p.L4 = KindICMPError, h.proto, l4
	p.Src, p.Dst = dst, src
	p.SrcPort, p.DstPort = dstPort, srcPort
}

// IsEcho reports whether p is an ICMP or ICMPv6 echo request or reply,
// whole (KindICMPEcho) or the first fragment of one. Routes match both the
// same way, and both carry the identifier as ports.
func (p *Packet) IsEcho() bool {
	switch p.Kind {
	case KindICMPEcho:
		return true
	case KindFirstFragment:
		return isICMP(p.Family, p.Proto) && icmpClassOf(p.Family, p.ICMPType) == icmpEcho
	}
	return false
}

// hasPorts reports whether proto's header starts with source and
// destination port.
func hasPorts(proto model.Protocol) bool {
	return proto == model.ProtoTCP || proto == model.ProtoUDP || proto == model.ProtoSCTP
}

// isICMP reports whether proto is the ICMP of the IP family: ICMP in IPv4,
// ICMPv6 in IPv6.
func isICMP(family uint8, proto model.Protocol) bool {
	return (family == 4 && proto == model.ProtoICMP) || (family == 6 && proto == model.ProtoICMPv6)
}
