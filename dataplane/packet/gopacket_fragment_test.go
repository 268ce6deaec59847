package packet

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// fragmentReference is what gopacket makes of one fragment: the datagram's
// identity and the fragment's place, and for a first fragment the ports of
// the transport header it carries.
type fragmentReference struct {
	src, dst netip.Addr
	id       uint32
	offset   uint16 // in 8-byte units
	more     bool
	// payload is the fragment's share of the fragmentable part; next names
	// its first header (IPv4 protocol, IPv6 fragment header's next header).
	payload []byte
	next    layers.IPProtocol
}

func gopacketFragment(t *testing.T, b []byte) fragmentReference {
	t.Helper()
	first := layers.LayerTypeIPv4
	if b[0]>>4 == 6 {
		first = layers.LayerTypeIPv6
	}
	pkt := gopacket.NewPacket(b, first, gopacket.Default)
	var r fragmentReference
	found := false
	for _, l := range pkt.Layers() {
		switch l := l.(type) {
		case *layers.IPv4:
			r.src, r.dst, r.id = netAddr(l.SrcIP), netAddr(l.DstIP), uint32(l.Id)
			r.offset, r.more = l.FragOffset, l.Flags&layers.IPv4MoreFragments != 0
			r.payload, r.next, found = l.Payload, l.Protocol, true
		case *layers.IPv6:
			r.src, r.dst = netAddr(l.SrcIP), netAddr(l.DstIP)
		case *layers.IPv6Fragment:
			r.id, r.offset, r.more = l.Identification, l.FragmentOffset, l.MoreFragments
			r.payload, r.next, found = l.Payload, l.NextHeader, true
		}
	}
	if !found {
		t.Fatalf("gopacket finds no fragment in %x", b)
	}
	return r
}

// TestDecodeFragmentsMatchGopacket splits random datagrams (TCP, UDP,
// SCTP, echo; IPv6 with extension headers before the fragment header and
// Destination Options or an Authentication Header after it) into fragments
// of random size and compares every fragment with gopacket: addresses,
// identification, first or later, and the first fragment's ports (gopacket
// decoding the fragmentable part from the header the fragment names).
func TestDecodeFragmentsMatchGopacket(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	counts := map[Kind]int{}
	for i := range 1000 {
		six := rng.IntN(2) == 1
		frags := randomFragments(rng, six)
		var first Packet
		for j, b := range frags {
			var p Packet
			p.Decode(b)
			r := gopacketFragment(t, b)
			name := map[bool]string{true: "v6", false: "v4"}[six]
			wantKind := KindLaterFragment
			if r.offset == 0 {
				wantKind = KindFirstFragment
			}
			if p.Kind != wantKind || p.Src != r.src || p.Dst != r.dst || p.FragID != r.id {
				t.Fatalf("%s datagram %d fragment %d %x: kind %v (err %v) %v -> %v id %d; gopacket offset %d %v -> %v id %d",
					name, i, j, b, p.Kind, p.Err, p.Src, p.Dst, p.FragID, r.offset, r.src, r.dst, r.id)
			}
			counts[p.Kind]++
			if p.Kind == KindFirstFragment {
				first = p
				compareFirstFragment(t, name, &p, r)
				continue
			}
			// RFC 791 section 3.2 and RFC 8200 section 4.5: the same
			// datagram is named by every fragment.
			if p.Src != first.Src || p.Dst != first.Dst || p.FragID != first.FragID || (!six && p.Proto != first.Proto) {
				t.Fatalf("%s datagram %d: fragment %d names another datagram than its first: %+v vs %+v", name, i, j, p, first)
			}
		}
	}
	if counts[KindFirstFragment] != 1000 || counts[KindLaterFragment] < 1000 {
		t.Errorf("fragments compared: %v", counts)
	}
}

func compareFirstFragment(t *testing.T, name string, p *Packet, r fragmentReference) {
	t.Helper()
	ref := gopacketDecodeFrom(r.payload, r.next.LayerType())
	if uint8(p.Proto) != ref.proto || !ref.hasPorts {
		t.Fatalf("%s first fragment: protocol %d, gopacket %d (ports found %v)", name, p.Proto, ref.proto, ref.hasPorts)
	}
	if p.SrcPort != ref.srcPort || p.DstPort != ref.dstPort {
		t.Errorf("%s first fragment: ports %d -> %d, gopacket %d -> %d", name, p.SrcPort, p.DstPort, ref.srcPort, ref.dstPort)
	}
}

// gopacketDecodeFrom decodes b from layer type first and returns the
// protocol after the extension headers and the transport's ports.
func gopacketDecodeFrom(b []byte, first gopacket.LayerType) reference {
	var r reference
	for _, l := range gopacket.NewPacket(b, first, gopacket.Default).Layers() {
		switch l := l.(type) {
		case *layers.IPv6Destination:
			r.proto = uint8(l.NextHeader)
		case *layers.IPSecAH:
			r.proto = uint8(l.NextHeader)
		case *layers.TCP:
			r.proto, r.srcPort, r.dstPort, r.hasPorts = 6, uint16(l.SrcPort), uint16(l.DstPort), true
		case *layers.UDP:
			r.proto, r.srcPort, r.dstPort, r.hasPorts = 17, uint16(l.SrcPort), uint16(l.DstPort), true
		case *layers.SCTP:
			r.proto, r.srcPort, r.dstPort, r.hasPorts = 132, uint16(l.SrcPort), uint16(l.DstPort), true
		case *layers.ICMPv4:
			r.proto, r.srcPort, r.dstPort, r.hasPorts = 1, l.Id, l.Id, true
		case *layers.ICMPv6:
			r.proto = 58
		case *layers.ICMPv6Echo:
			r.srcPort, r.dstPort, r.hasPorts = l.Identifier, l.Identifier, true
		}
	}
	return r
}

// randomFragments builds one random datagram split into fragments, the
// first carrying the whole transport header (and every extension header of
// the fragmentable part), in sending order.
func randomFragments(rng *rand.Rand, six bool) [][]byte {
	src, dst := randomAddr(rng, six), randomAddr(rng, six)
	proto, l4 := randomTransport(rng, six)
	if proto == 6 {
		l4[12] = 5 << 4 // a plain 20-byte TCP header, as gopacket checks the data offset
	}
	body := concat(l4, make([]byte, 8*rng.IntN(200)))
	id := rng.Uint32()
	if !six {
		id &= 0xffff
	}
	var unfragmentable, fragmentable []ext
	if six {
		if rng.IntN(2) == 0 {
			unfragmentable = append(unfragmentable, optsExt(0, rng.IntN(3)))
		}
		if rng.IntN(3) == 0 {
			unfragmentable = append(unfragmentable, optsExt(43, rng.IntN(3)))
		}
		if rng.IntN(2) == 0 {
			fragmentable = append(fragmentable, ahExt(2+2*rng.IntN(3)))
		}
		if rng.IntN(2) == 0 {
			fragmentable = append(fragmentable, optsExt(60, rng.IntN(3)))
		}
	}
	// The fragmentable part with its next-header chain, and the number of
	// its first header.
	next, data := proto, body
	if six {
		whole := ipv6(v6{src: src, dst: dst, proto: proto, exts: fragmentable}, body)
		next, data = whole[6], whole[40:]
	}
	firstLen := (len(data) - len(body) + len(l4) + 7) &^ 7
	var out [][]byte
	for off := 0; off < len(data); {
		size := firstLen + 8*rng.IntN(20)
		if off > 0 {
			size = 8 * (1 + rng.IntN(40))
		}
		end := min(off+size, len(data))
		more := end < len(data)
		if six {
			exts := append(append([]ext(nil), unfragmentable...), fragExt(uint16(off/8), more, id))
			out = append(out, ipv6(v6{src: src, dst: dst, proto: next, exts: exts}, data[off:end]))
		} else {
			out = append(out, ipv4(v4{src: src, dst: dst, proto: proto, id: uint16(id), moreFrags: more, fragOffset: uint16(off / 8)}, data[off:end]))
		}
		off = end
	}
	if len(out) == 1 { // too short to fragment: make it a first fragment of two
		return randomFragments(rng, six)
	}
	return out
}
