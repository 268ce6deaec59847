package classify

import (
	"encoding/binary"
	"net/netip"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/model"
)

// admitsSource reports whether src (unmapped) is within the rule's sources.
func (r *rule) admitsSource(src netip.Addr) bool {
	if r.anySource {
		return true
	}
	prefixes := r.src6
	if src.Is4() {
		prefixes = r.src4
	}
	for _, p := range prefixes {
		if p.Contains(src) {
			return true
		}
	}
	return false
}

// matchesFlow checks everything but the destination address, the protocol
// and (unless checkDstPort) the destination port, which the index has
// already established.
func (r *rule) matchesFlow(p *packet.Packet, src netip.Addr, checkDstPort bool) bool {
	if !r.admitsSource(src) {
		return false
	}
	if checkDstPort && !inRanges(r.dstPorts, p.DstPort) {
		return false
	}
	if !inRanges(r.srcPorts, p.SrcPort) {
		return false
	}
	for i := range r.bytes {
		if r.bytes[i].Protocol == p.Proto && !bytesHold(&r.bytes[i], p.L4) {
			return false
		}
	}
	return true
}

// inRanges reports whether port lies in one of the sorted ranges; nil means any.
func inRanges(ranges []model.PortRange, port uint16) bool {
	if ranges == nil {
		return true
	}
	for _, r := range ranges {
		if port < r.From {
			return false
		}
		if port <= r.To {
			return true
		}
	}
	return false
}

// bytesHold evaluates one byte-match statement against the transport bytes;
// it fails when l4 ends before the field does.
func bytesHold(m *model.ByteMatch, l4 []byte) bool {
	v, ok := byteField(m, l4)
	return ok && v&m.Mask == m.Value
}

// byteField reads the field m tests, big-endian; false when l4 ends before
// the field does.
func byteField(m *model.ByteMatch, l4 []byte) (uint32, bool) {
	off := int(m.Offset)
	if off+int(m.Size) > len(l4) {
		return 0, false
	}
	switch m.Size {
	case 1:
		return uint32(l4[off]), true
	case 2:
		return uint32(binary.BigEndian.Uint16(l4[off:])), true
	default:
		return binary.BigEndian.Uint32(l4[off:]), true
	}
}
