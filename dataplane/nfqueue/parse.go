package nfqueue

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// Parse errors. They are constants of the package so that reporting them
// allocates nothing.
var (
	errShortMessage = errors.New("nfqueue: netlink message shorter than its header")
	errBadLength    = errors.New("nfqueue: netlink message length out of bounds")
	errBadAttr      = errors.New("nfqueue: malformed netlink attribute")
	errNoPacketHdr  = errors.New("nfqueue: packet message without NFQA_PACKET_HDR")
)

// typePacket is the nlmsg_type of a queued packet.
const typePacket = unix.NFNL_SUBSYS_QUEUE<<8 | msgPacket

// splitMessage cuts the first netlink message off b. On errBadLength (the
// header claims more bytes than b holds, e.g. a truncated datagram) msg is
// what b holds of it and rest is empty, so that the caller can still try to
// read the packet id.
func splitMessage(b []byte) (typ uint16, msg, rest []byte, err error) {
	if len(b) < nlmsgHeaderLen {
		return 0, nil, nil, errShortMessage
	}
	n := int(binary.NativeEndian.Uint32(b[0:4]))
	typ = binary.NativeEndian.Uint16(b[4:6])
	if n < nlmsgHeaderLen {
		return typ, nil, nil, errBadLength
	}
	if n > len(b) {
		return typ, b, nil, errBadLength
	}
	next := min(align4(n), len(b))
	return typ, b[:n], b[next:], nil
}

// parsePacket fills p from msg, one NFQNL_MSG_PACKET message including its
// netlink header. hasID reports whether the packet id was read, which may
// be the case even when err is not nil (a malformed attribute after
// NFQA_PACKET_HDR): such a packet can still be given a verdict.
func parsePacket(msg []byte, p *Packet) (hasID bool, err error) {
	*p = Packet{}
	if len(msg) < nlmsgHeaderLen+nfgenmsgLen {
		return false, errShortMessage
	}
	capLen := -1
	attrs := msg[nlmsgHeaderLen+nfgenmsgLen:]
	for len(attrs) >= attrHeaderLen {
		n := int(binary.NativeEndian.Uint16(attrs[0:2]))
		if n < attrHeaderLen || n > len(attrs) {
			return hasID, errBadAttr
		}
		typ := binary.NativeEndian.Uint16(attrs[2:4]) & attrTypeMask
		if !parseAttr(typ, attrs[attrHeaderLen:n], p, &capLen) {
			return hasID, errBadAttr
		}
		if typ == attrPacketHdr {
			hasID = true
		}
		attrs = attrs[min(align4(n), len(attrs)):]
	}
	if !hasID {
		return false, errNoPacketHdr
	}
	p.Length = len(p.Payload)
	if capLen > p.Length {
		p.Length = capLen
	}
	return true, nil
}

// parseAttr stores one attribute's value in p; it reports false when the
// value is too short for its type. Unknown attributes are ignored.
func parseAttr(typ uint16, v []byte, p *Packet, capLen *int) bool {
	switch typ {
	case attrPacketHdr:
		if len(v) < packetHdrLen {
			return false
		}
		p.ID = binary.BigEndian.Uint32(v[0:4])
		p.HwProtocol = binary.BigEndian.Uint16(v[4:6])
		p.Hook = v[6]
	case attrPayload:
		p.Payload = v
	case attrMark, attrIfindexIn, attrIfindexOut, attrCapLen, attrSkbInfo:
		if len(v) < 4 {
			return false
		}
		x := binary.BigEndian.Uint32(v)
		switch typ {
		case attrMark:
			p.Mark = x
		case attrIfindexIn:
			p.InIfindex = x
		case attrIfindexOut:
			p.OutIfindex = x
		case attrCapLen:
			*capLen = int(x)
		case attrSkbInfo:
			p.SkbInfo = x
		}
	}
	return true
}

// parseError reads the error code of an NLMSG_ERROR message (0 for an
// acknowledgement) and the sequence number of the request it answers.
func parseError(msg []byte) (errno unix.Errno, seq uint32, err error) {
	if len(msg) < nlmsgHeaderLen+nlmsgErrorLen {
		return 0, 0, errShortMessage
	}
	code := int32(binary.NativeEndian.Uint32(msg[nlmsgHeaderLen:]))
	seq = binary.NativeEndian.Uint32(msg[nlmsgHeaderLen+4+8:])
	return unix.Errno(-code), seq, nil
}
