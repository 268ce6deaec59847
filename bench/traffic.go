package bench

import (
	"math/rand/v2"
	"net/netip"

	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

// The addresses of the mixes; config.go routes them.
var (
	VIP4 = []netip.Addr{netip.MustParseAddr("20.0.0.1"), netip.MustParseAddr("20.0.0.2")}
	VIP6 = []netip.Addr{netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")}
	// Router is where ICMP errors come from (a hop between client and LB).
	Router4 = netip.MustParseAddr("192.0.2.254")
	Router6 = netip.MustParseAddr("2001:db8:ff::fe")
)

// Mix names a generated traffic mix.
type Mix struct {
	Name    string
	Packets func(r *rand.Rand) [][]byte
}

// Mixes are the pcaps in testdata, one per entry.
var Mixes = []Mix{
	{"mix-ipv4", func(r *rand.Rand) [][]byte { return mix(r, VIP4, Router4, clients4) }},
	{"mix-ipv6", func(r *rand.Rand) [][]byte { return mix(r, VIP6, Router6, clients6) }},
	{"udp64-ipv4", udp64},
}

func clients4(r *rand.Rand) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(256)), byte(1 + r.IntN(254))})
}

func clients6(r *rand.Rand) netip.Addr {
	a := [16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))}
	return netip.AddrFrom16(a)
}

// mix is a telecom-like blend: mostly TCP and UDP (some with IPv4 options or
// IPv6 extension headers), SCTP, ICMP echo, ICMP errors for reply flows,
// fragmented datagrams, traffic to unrouted ports and a few broken packets.
func mix(r *rand.Rand, vips []netip.Addr, router netip.Addr, client func(*rand.Rand) netip.Addr) [][]byte {
	var out [][]byte
	for i := range 2000 {
		vip := vips[r.IntN(len(vips))]
		c := client(r)
		sport := uint16(1024 + r.IntN(60000))
		opts := testpkt.Options{IPv4Options: r.IntN(10) == 0, IPv6Ext: r.IntN(10) == 0}
		payload := make([]byte, 16+r.IntN(200))
		switch n := r.IntN(100); {
		case n < 40:
			out = append(out, testpkt.Packet(testpkt.Flow{Src: c, Dst: vip, Proto: 6, SrcPort: sport, DstPort: []uint16{80, 443}[r.IntN(2)]}, payload, opts))
		case n < 70:
			out = append(out, testpkt.Packet(testpkt.Flow{Src: c, Dst: vip, Proto: 17, SrcPort: sport, DstPort: uint16(5000 + r.IntN(100))}, payload, opts))
		case n < 80:
			out = append(out, testpkt.Packet(testpkt.Flow{Src: c, Dst: vip, Proto: 132, SrcPort: sport, DstPort: 36412}, payload, opts))
		case n < 84:
			out = append(out, testpkt.Echo(c, vip, uint16(r.IntN(65536)), uint16(i)))
		case n < 88:
			// A reply from a target (source VIP) hit a hop whose MTU is too
			// small: the error comes back to the VIP and must reach that target.
			reply := testpkt.Packet(testpkt.Flow{Src: vip, Dst: c, Proto: 6, SrcPort: 443, DstPort: sport}, make([]byte, 1400), testpkt.Options{})
			if vip.Is4() {
				out = append(out, testpkt.ICMPError(router, reply, testpkt.ICMPv4Unreachable, testpkt.ICMPv4FragNeeded, 1280))
			} else {
				out = append(out, testpkt.ICMPError(router, reply, testpkt.ICMPv6PacketTooBig, 0, 1280))
			}
		case n < 94:
			frags := testpkt.Fragments(testpkt.Flow{Src: c, Dst: vip, Proto: 17, SrcPort: sport, DstPort: 5000}, make([]byte, 2500), 1200, uint32(r.Uint32()))
			out = append(out, frags...)
		case n < 98:
			out = append(out, testpkt.Packet(testpkt.Flow{Src: c, Dst: vip, Proto: 17, SrcPort: sport, DstPort: 9}, payload, opts)) // no route
		default:
			p := testpkt.Packet(testpkt.Flow{Src: c, Dst: vip, Proto: 6, SrcPort: sport, DstPort: 80}, payload, opts)
			out = append(out, p[:r.IntN(30)]) // truncated: undecodable
		}
	}
	return out
}

// udp64 is the end-to-end benchmark's traffic: 64-byte IPv4 UDP packets over
// many flows to one VIP.
func udp64(r *rand.Rand) [][]byte {
	out := make([][]byte, 0, 4096)
	for range 4096 {
		f := testpkt.Flow{Src: clients4(r), Dst: VIP4[0], Proto: 17, SrcPort: uint16(1024 + r.IntN(60000)), DstPort: 5001}
		out = append(out, testpkt.Packet(f, make([]byte, 64-28), testpkt.Options{}))
	}
	return out
}
