package classify

import (
	"math/rand/v2"
	"net/netip"
	"strconv"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/model"
)

var synSetMatch = model.ByteMatch{Protocol: model.ProtoTCP, Offset: 13, Size: 1, Mask: 0x02, Value: 0x02}

// vipAddr returns the v-th VIP: three in four IPv4, one in four IPv6.
func vipAddr(v int) netip.Addr {
	if v%4 == 3 {
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(v >> 8), 15: byte(v)})
	}
	return netip.AddrFrom4([4]byte{20, byte(v >> 16), byte(v >> 8), byte(v)})
}

// realisticRoutes returns n routes as a large installation might have them:
// four routes per VIP (a single port, a port range, a port list with a
// few byte matches, and a catch-all), some restricted to source CIDRs.
func realisticRoutes(n int) []model.Route {
	routes := make([]model.Route, n)
	for i := range routes {
		a := vipAddr(i / 4)
		r := model.Route{
			Name:         "ns/route-" + strconv.Itoa(i),
			Service:      "svc-" + strconv.Itoa(i%50),
			Destinations: []netip.Prefix{netip.PrefixFrom(a, a.BitLen())},
			Protocols:    []model.Protocol{model.ProtoTCP},
		}
		switch i % 4 {
		case 0:
			r.Priority, r.DestinationPorts = 10, []model.PortRange{{From: 80, To: 80}}
		case 1:
			r.Priority, r.DestinationPorts = 5, []model.PortRange{{From: 4000, To: 4100}}
			r.Protocols = append(r.Protocols, model.ProtoUDP)
		case 2:
			r.Priority = 7
			r.DestinationPorts = []model.PortRange{{From: 53, To: 53}, {From: 443, To: 443}, {From: 8080, To: 8090}}
			if i%20 == 2 {
				r.ByteMatches = []model.ByteMatch{synSetMatch}
			}
		case 3:
			r.Priority = 1
		}
		if i%10 == 0 {
			r.Sources = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
		}
		routes[i] = r
	}
	return routes
}

// packetsFor returns count packets, each built to satisfy a random route.
func packetsFor(routes []model.Route, count int, rng *rand.Rand) []packet.Packet {
	l4 := make([]byte, 20)
	l4[13] = 0x02 // SYN
	out := make([]packet.Packet, count)
	for i := range out {
		r := routes[rng.IntN(len(routes))]
		dst := r.Destinations[0].Addr()
		src := netip.MustParseAddr("10.1.2.3")
		if dst.Is6() {
			src = netip.MustParseAddr("fd00::1:2:3")
		}
		dport := uint16(rng.IntN(65536))
		if len(r.DestinationPorts) > 0 {
			pr := r.DestinationPorts[rng.IntN(len(r.DestinationPorts))]
			dport = pr.From + uint16(rng.IntN(int(pr.To-pr.From)+1))
		}
		out[i] = packet.Packet{Kind: packet.KindTransport, Proto: r.Protocols[0], Src: src, Dst: dst,
			SrcPort: uint16(1024 + rng.IntN(60000)), DstPort: dport, L4: l4}
	}
	return out
}

// randomRoutes draws n routes from a small universe so that they overlap
// on addresses, ports and sources.
func randomRoutes(n int, rng *rand.Rand) []model.Route {
	routes := make([]model.Route, n)
	for i := range routes {
		a := vipAddr(rng.IntN(4))
		r := model.Route{
			Name:         "r" + strconv.Itoa(i),
			Service:      "s",
			Priority:     int32(1 + rng.IntN(3)),
			Destinations: []netip.Prefix{netip.PrefixFrom(a, a.BitLen())},
			Protocols:    []model.Protocol{[]model.Protocol{model.ProtoTCP, model.ProtoUDP}[rng.IntN(2)]},
		}
		r.DestinationPorts = randomRanges(rng)
		r.SourcePorts = randomRanges(rng)
		if rng.IntN(3) == 0 {
			r.Sources = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
		}
		if r.Protocols[0] == model.ProtoTCP && rng.IntN(3) == 0 {
			r.ByteMatches = []model.ByteMatch{synSetMatch}
		}
		routes[i] = r
	}
	return routes
}

func randomRanges(rng *rand.Rand) []model.PortRange {
	out := make([]model.PortRange, rng.IntN(3))
	for i := range out {
		from := uint16(rng.IntN(20))
		out[i] = model.PortRange{From: from, To: from + uint16(rng.IntN(6))}
	}
	return out
}

// randomPacket draws a packet that may or may not match routes of randomRoutes.
func randomPacket(rng *rand.Rand) *packet.Packet {
	dst := vipAddr(rng.IntN(5))
	srcs := []string{"10.0.0.1", "11.0.0.1", "fd00::1", "fe80::1"}
	kinds := []packet.Kind{packet.KindTransport, packet.KindTransport, packet.KindICMPError, packet.KindICMPEcho, packet.KindLaterFragment}
	l4 := make([]byte, rng.IntN(22))
	if len(l4) > 13 {
		l4[13] = byte(rng.IntN(4))
	}
	return &packet.Packet{
		Kind:    kinds[rng.IntN(len(kinds))],
		Proto:   []model.Protocol{model.ProtoTCP, model.ProtoUDP, model.ProtoSCTP}[rng.IntN(3)],
		Src:     netip.MustParseAddr(srcs[rng.IntN(2)+2*boolToInt(dst.Is6())]),
		Dst:     dst,
		SrcPort: uint16(rng.IntN(24)),
		DstPort: uint16(rng.IntN(24)),
		L4:      l4,
	}
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
