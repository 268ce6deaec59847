package translate

import (
	"net/netip"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/model"
)

// Smallest IP headers: the transport header of a packet starts at least
// this many bytes into what the dataplane sees (IPv4 options and IPv6
// extension headers only push it further).
const (
	minIPv4Header = 20 // RFC 791 section 3.1: IHL is at least 5 32-bit words
	minIPv6Header = 40 // RFC 8200 section 3: the fixed header
)

// transportRoom is how many bytes of the transport header and payload a
// packet to any of destinations can bring within copyRange bytes, at most:
// the copy range less the smallest IP header of the destinations' families
// (the larger one when they mix families). ok is false when there is no
// limit to check (no copy range given, or no usable destination).
type transportRoom struct {
	ok        bool
	bytes     int    // copy range less the header; may be negative
	copyRange int    // what the room was computed from
	header    int    // the smallest header of family
	family    string // "IPv4" or "IPv6"
}

func roomFor(copyRange int, destinations []netip.Prefix) transportRoom {
	room := transportRoom{copyRange: copyRange}
	if copyRange <= 0 {
		return room
	}
	for _, d := range destinations {
		h, f := minIPv4Header, "IPv4"
		if !d.Addr().Is4() {
			h, f = minIPv6Header, "IPv6"
		}
		if h > room.header {
			room.header, room.family = h, f
		}
	}
	room.ok = room.header > 0
	room.bytes = copyRange - room.header
	return room
}

// check reports m if it ends beyond the room: it could never hold, since
// the dataplane never sees the bytes it reads.
func (room transportRoom) check(r *v1alpha1.L34Route, field string, m model.ByteMatch, ps *problems) bool {
	end := int(m.Offset) + int(m.Size)
	if !room.ok || end <= room.bytes {
		return true
	}
	ps.add(KindL34Route, r, field, "%s reads bytes %d..%d of the transport header, but with a copy range of %d bytes "+
		"sllbrd sees at most %d bytes of it in an %s packet (%d-byte header at least), so it could never match; "+
		"raise --copy-range to at least %d or remove the match",
		m, m.Offset, end-1, room.copyRange, max(room.bytes, 0), room.family, room.header, end+room.header)
	return false
}
