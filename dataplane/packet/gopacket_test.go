package packet

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// reference is what gopacket makes of a packet: the first IP header's
// addresses, the protocol after its extension headers, and the first
// transport header's ports or ICMP fields.
type reference struct {
	src, dst         netip.Addr
	proto            uint8
	srcPort, dstPort uint16
	hasPorts         bool
	icmpType         uint8
	icmpPayload      []byte // after the 8-byte ICMP/ICMPv6 header
	isICMP           bool
	// opaque: gopacket met an error or a fragment header, so it has not
	// seen the protocol and ports; only the addresses compare.
	opaque bool
}

func gopacketDecode(b []byte) reference {
	first := layers.LayerTypeIPv4
	if len(b) > 0 && b[0]>>4 == 6 {
		first = layers.LayerTypeIPv6
	}
	var r reference
	haveIP := false
	pkt := gopacket.NewPacket(b, first, gopacket.Default)
	r.opaque = pkt.ErrorLayer() != nil
	for _, l := range pkt.Layers() {
		switch l := l.(type) {
		case *layers.IPv4:
			if !haveIP {
				r.src, r.dst, r.proto, haveIP = netAddr(l.SrcIP), netAddr(l.DstIP), uint8(l.Protocol), true
			}
		case *layers.IPv6:
			if !haveIP {
				r.src, r.dst, r.proto, haveIP = netAddr(l.SrcIP), netAddr(l.DstIP), uint8(l.NextHeader), true
			}
			if l.HopByHop != nil {
				r.proto = uint8(l.HopByHop.NextHeader)
			}
		case *layers.IPv6HopByHop:
			r.proto = uint8(l.NextHeader)
		case *layers.IPv6Routing:
			r.proto = uint8(l.NextHeader)
		case *layers.IPv6Destination:
			r.proto = uint8(l.NextHeader)
		case *layers.IPSecAH:
			r.proto = uint8(l.NextHeader)
		case *layers.IPv6Fragment:
			r.opaque = true
		case *layers.TCP:
			r.srcPort, r.dstPort, r.hasPorts = uint16(l.SrcPort), uint16(l.DstPort), true
		case *layers.UDP:
			r.srcPort, r.dstPort, r.hasPorts = uint16(l.SrcPort), uint16(l.DstPort), true
		case *layers.SCTP:
			r.srcPort, r.dstPort, r.hasPorts = uint16(l.SrcPort), uint16(l.DstPort), true
		case *layers.ICMPv4:
			r.isICMP, r.icmpType, r.icmpPayload = true, l.TypeCode.Type(), l.Payload
			if t := l.TypeCode.Type(); t == 0 || t == 8 {
				r.srcPort, r.dstPort, r.hasPorts = l.Id, l.Id, true
			}
		case *layers.ICMPv6:
			r.isICMP, r.icmpType = true, l.TypeCode.Type()
			if len(l.Payload) >= 4 {
				r.icmpPayload = l.Payload[4:]
			}
		case *layers.ICMPv6Echo:
			r.srcPort, r.dstPort, r.hasPorts = l.Identifier, l.Identifier, true
		}
	}
	return r
}

func netAddr(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a
}

// compareWithGopacket checks p, decoded from b, against gopacket and
// returns how many port pairs it compared.
func compareWithGopacket(t *testing.T, name string, b []byte, p Packet) (portsCompared int) {
	t.Helper()
	if p.Kind == KindInvalid {
		return 0
	}
	r := gopacketDecode(b)
	if p.Kind == KindICMPError {
		if !r.isICMP || r.icmpType != p.ICMPType {
			t.Errorf("%s: gopacket sees no ICMP type %d", name, p.ICMPType)
			return 0
		}
		r = gopacketDecode(r.icmpPayload)
		r.src, r.dst, r.srcPort, r.dstPort = r.dst, r.src, r.dstPort, r.srcPort
	}
	if p.Src != r.src || p.Dst != r.dst {
		t.Errorf("%s: addresses %v -> %v, gopacket %v -> %v", name, p.Src, p.Dst, r.src, r.dst)
	}
	if p.Kind == KindFirstFragment || p.Kind == KindLaterFragment || r.opaque {
		return 0 // gopacket does not look into fragments
	}
	if uint8(p.Proto) != r.proto {
		t.Errorf("%s: protocol %d, gopacket %d", name, p.Proto, r.proto)
	}
	if (p.Kind == KindTransport || p.Kind == KindICMPEcho) && !r.hasPorts {
		t.Errorf("%s: kind %v but gopacket finds no ports", name, p.Kind)
	}
	if !r.hasPorts || p.Kind == KindOther {
		return 0
	}
	if p.SrcPort != r.srcPort || p.DstPort != r.dstPort {
		t.Errorf("%s: ports %d -> %d, gopacket %d -> %d", name, p.SrcPort, p.DstPort, r.srcPort, r.dstPort)
	}
	return 1
}

func TestDecodeTableMatchesGopacket(t *testing.T) {
	compared := 0
	for _, tc := range decodeCases() {
		var p Packet
		p.Decode(tc.pkt)
		compared += compareWithGopacket(t, tc.name, tc.pkt, p)
	}
	if compared < 25 {
		t.Errorf("only %d cases had ports compared with gopacket", compared)
	}
}

// TestDecodeRandomMatchesGopacket decodes random well-formed packets (IPv4
// options, IPv6 extension header chains, TCP/UDP/SCTP/echo, optionally
// wrapped in an ICMP error) and compares with gopacket.
func TestDecodeRandomMatchesGopacket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := map[Kind]int{}
	for i := range 3000 {
		b, wantKind := randomPacket(rng)
		var p Packet
		p.Decode(b)
		if p.Kind != wantKind {
			t.Fatalf("random packet %d %x: kind %v (err %v), want %v", i, b, p.Kind, p.Err, wantKind)
		}
		kinds[p.Kind] += compareWithGopacket(t, "random", b, p)
	}
	for _, k := range []Kind{KindTransport, KindICMPEcho, KindICMPError} {
		if kinds[k] < 100 {
			t.Errorf("only %d random %v packets had ports compared", kinds[k], k)
		}
	}
}

func randomPacket(rng *rand.Rand) ([]byte, Kind) {
	six := rng.IntN(2) == 1
	src, dst := randomAddr(rng, six), randomAddr(rng, six)
	proto, l4 := randomTransport(rng, six)
	b := randomIP(rng, six, src, dst, proto, l4)
	if rng.IntN(3) > 0 {
		return b, map[bool]Kind{true: KindICMPEcho, false: KindTransport}[proto == 1 || proto == 58]
	}
	// Wrap in an ICMP error that carries the IP headers and 8 or more
	// bytes of the transport header.
	keep := len(b) - len(l4) + 8 + rng.IntN(len(l4)-8+1)
	typ, icmpProto := uint8(3), uint8(1)
	if six {
		typ, icmpProto = uint8(1+rng.IntN(3)), 58
	} else if rng.IntN(2) == 0 {
		typ = 11
	}
	msg := icmp(typ, uint8(rng.IntN(16)), rng.Uint32(), b[:keep])
	return randomIP(rng, six, randomAddr(rng, six), randomAddr(rng, six), icmpProto, msg), KindICMPError
}

func randomAddr(rng *rand.Rand, six bool) string {
	if six {
		var a [16]byte
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		a[0] = 0x20 // keep clear of IPv4-mapped forms
		return netip.AddrFrom16(a).String()
	}
	return netip.AddrFrom4([4]byte{byte(1 + rng.IntN(223)), byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32())}).String()
}

func randomTransport(rng *rand.Rand, six bool) (uint8, []byte) {
	sp, dp := uint16(rng.Uint32()), uint16(rng.Uint32())
	switch rng.IntN(4) {
	case 0:
		return 6, tcp(sp, dp)
	case 1:
		return 17, udp(sp, dp)
	case 2:
		return 132, sctp(sp, dp)
	}
	if six {
		return 58, echo(uint8(128+rng.IntN(2)), sp, dp)
	}
	return 1, echo(uint8(8*rng.IntN(2)), sp, dp)
}

func randomIP(rng *rand.Rand, six bool, src, dst string, proto uint8, payload []byte) []byte {
	if !six {
		opts := make([]byte, 4*rng.IntN(11))
		for i := range opts {
			opts[i] = 1 // no-operation
		}
		return ipv4(v4{src: src, dst: dst, proto: proto, id: uint16(rng.Uint32()), dontFrag: rng.IntN(2) == 0, options: opts}, payload)
	}
	var exts []ext
	if rng.IntN(2) == 0 {
		exts = append(exts, optsExt(0, rng.IntN(4)))
	}
	for range rng.IntN(4) {
		switch rng.IntN(3) {
		case 0:
			exts = append(exts, optsExt(43, rng.IntN(4)))
		case 1:
			exts = append(exts, optsExt(60, rng.IntN(40)))
		case 2:
			exts = append(exts, ahExt(2+2*rng.IntN(4)))
		}
	}
	return ipv6(v6{src: src, dst: dst, proto: proto, exts: exts}, payload)
}

// TestDecodeGopacketBuilt decodes packets that gopacket serialized (an
// independent builder), including IPv4 options and ICMP errors.
func TestDecodeGopacketBuilt(t *testing.T) {
	src4, dst4 := net.IP{192, 0, 2, 1}, net.IP{198, 51, 100, 7}
	ip4 := func(proto layers.IPProtocol, src, dst net.IP, opts ...layers.IPv4Option) *layers.IPv4 {
		return &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: src, DstIP: dst, Options: opts}
	}
	rr := layers.IPv4Option{OptionType: 7, OptionLength: 11, OptionData: []byte{4, 1, 2, 3, 4, 5, 6, 7, 8}}
	ip6 := func(next layers.IPProtocol, src, dst string) *layers.IPv6 {
		return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: next,
			SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	}
	innerUDP := serialize(t, ip4(layers.IPProtocolUDP, dst4, src4, rr), &layers.UDP{SrcPort: 53, DstPort: 3333}, gopacket.Payload("dns"))
	innerTCP6 := serialize(t, ip6(layers.IPProtocolTCP, vip6, client6), &layers.TCP{SrcPort: 443, DstPort: 50001, DataOffset: 5}, gopacket.Payload("reply"))
	tests := []struct {
		name string
		pkt  []byte
		want Packet
	}{
		{"v4/tcp-record-route", serialize(t, ip4(layers.IPProtocolTCP, src4, dst4, rr), &layers.TCP{SrcPort: 1234, DstPort: 80, DataOffset: 5}),
			Packet{Kind: KindTransport, Family: 4, Proto: 6, Src: netAddr(src4), Dst: netAddr(dst4), SrcPort: 1234, DstPort: 80}},
		{"v4/sctp", serialize(t, ip4(layers.IPProtocolSCTP, src4, dst4), &layers.SCTP{SrcPort: 3868, DstPort: 3869, VerificationTag: 1}),
			Packet{Kind: KindTransport, Family: 4, Proto: 132, Src: netAddr(src4), Dst: netAddr(dst4), SrcPort: 3868, DstPort: 3869}},
		{"v4/frag-needed", serialize(t, ip4(layers.IPProtocolICMPv4, net.IP{203, 0, 113, 1}, dst4),
			&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(3, 4), Seq: 1400}, gopacket.Payload(innerUDP[:32+8])),
			Packet{Kind: KindICMPError, Family: 4, Proto: 17, Src: netAddr(src4), Dst: netAddr(dst4), SrcPort: 3333, DstPort: 53, ICMPType: 3, ICMPCode: 4}},
		{"v6/udp", serialize(t, ip6(layers.IPProtocolUDP, client6, vip6), &layers.UDP{SrcPort: 9, DstPort: 10}),
			Packet{Kind: KindTransport, Family: 6, Proto: 17, Src: c6, Dst: v6addr, SrcPort: 9, DstPort: 10}},
		{"v6/packet-too-big", serialize(t, ip6(layers.IPProtocolICMPv6, router6, vip6),
			&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(2, 0)}, gopacket.Payload(append([]byte{0, 0, 5, 0}, innerTCP6...))),
			Packet{Kind: KindICMPError, Family: 6, Proto: 6, Src: c6, Dst: v6addr, SrcPort: 50001, DstPort: 443, ICMPType: 2}},
	}
	for _, tc := range tests {
		var p Packet
		p.Decode(tc.pkt)
		p.L4 = nil
		if diff := fullDiff(p, tc.want); diff != "" {
			t.Errorf("%s: %x\n%s", tc.name, tc.pkt, diff)
		}
	}
}

func serialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, ls...); err != nil {
		t.Fatalf("serialize: %v", err)
	}
	return append([]byte(nil), buf.Bytes()...)
}
