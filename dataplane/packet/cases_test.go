package packet

import (
	"net/netip"

	"github.com/sllbrd/sllbrd/model"
)

// decodeCase is one hand-built packet and what Decode must make of it. For
// KindInvalid only Kind and Err are compared.
type decodeCase struct {
	name string
	pkt  []byte
	want Packet
}

const (
	client4, vip4, router4 = "10.0.0.1", "20.0.0.1", "30.0.0.1"
	client6, vip6, router6 = "2001:db8::1", "2001:db8:20::1", "2001:db8:30::1"
	protoGRE               = 47
	protoESP               = 50
	protoNoNext            = 59
)

var (
	c4, v4addr = netip.MustParseAddr(client4), netip.MustParseAddr(vip4)
	r4         = netip.MustParseAddr(router4)
	c6, v6addr = netip.MustParseAddr(client6), netip.MustParseAddr(vip6)
	r6         = netip.MustParseAddr(router6)
)

func invalid(err error) Packet { return Packet{Kind: KindInvalid, Err: err} }

// flow4 and flow6 are the expected decode of a client -> VIP packet.
func flow4(k Kind, proto model.Protocol, sp, dp uint16, l4 []byte) Packet {
	return Packet{Kind: k, Family: 4, Proto: proto, Src: c4, Dst: v4addr, SrcPort: sp, DstPort: dp, L4: l4}
}

func flow6(k Kind, proto model.Protocol, sp, dp uint16, l4 []byte) Packet {
	return Packet{Kind: k, Family: 6, Proto: proto, Src: c6, Dst: v6addr, SrcPort: sp, DstPort: dp, L4: l4}
}

func with(p Packet, f func(*Packet)) Packet { f(&p); return p }

func decodeCases() []decodeCase {
	return append(ipv4Cases(), ipv6Cases()...)
}

func ipv4Cases() []decodeCase {
	h := v4{src: client4, dst: vip4}
	proto := func(h v4, p uint8) v4 { h.proto = p; return h }
	tcpH, udpH, sctpH, icmpH := proto(h, 6), proto(h, 17), proto(h, 132), proto(h, 1)
	// The reply direction, VIP -> client, as embedded in ICMP errors.
	reply := v4{src: vip4, dst: client4}
	icmpErr := func(typ, code uint8, embedded []byte) []byte {
		return ipv4(v4{src: router4, dst: vip4, proto: 1}, icmp(typ, code, 0, embedded))
	}
	errFlow := func(proto model.Protocol, typ, code uint8, sp, dp uint16, l4 []byte) Packet {
		return Packet{Kind: KindICMPError, Family: 4, Proto: proto, Src: c4, Dst: v4addr,
			SrcPort: sp, DstPort: dp, L4: l4, ICMPType: typ, ICMPCode: code}
	}
	fromRouter := func(k Kind, typ, code uint8, l4 []byte) Packet {
		return Packet{Kind: k, Family: 4, Proto: 1, Src: r4, Dst: v4addr, L4: l4, ICMPType: typ, ICMPCode: code}
	}
	options := []byte{0x94, 4, 0, 0, 7, 11, 4, 10, 0, 0, 1, 0, 0, 0, 0} // router alert, record route
	maxOptions := make([]byte, 40)
	replyTCP := ipv4(proto(reply, 6), tcp(80, 40000))
	replyUDPOpts := ipv4(v4{src: vip4, dst: client4, proto: 17, options: options, totalLen: 300}, udp(53, 5353))
	unreach := func(embedded []byte) []byte { return icmpErr(3, 1, embedded) }

	return []decodeCase{
		{"v4/tcp", ipv4(tcpH, tcp(40000, 80)), flow4(KindTransport, 6, 40000, 80, tcp(40000, 80))},
		{"v4/udp", ipv4(udpH, udp(5353, 53)), flow4(KindTransport, 17, 5353, 53, udp(5353, 53))},
		{"v4/sctp", ipv4(sctpH, sctp(3868, 3869)), flow4(KindTransport, 132, 3868, 3869, sctp(3868, 3869))},
		{"v4/tcp-dont-fragment", ipv4(v4{src: client4, dst: vip4, proto: 6, dontFrag: true, id: 7}, tcp(1, 2)),
			flow4(KindTransport, 6, 1, 2, tcp(1, 2))},
		{"v4/tcp-options", ipv4(v4{src: client4, dst: vip4, proto: 6, options: options}, tcp(40000, 443)),
			flow4(KindTransport, 6, 40000, 443, tcp(40000, 443))},
		{"v4/udp-max-options", ipv4(v4{src: client4, dst: vip4, proto: 17, options: maxOptions}, udp(1, 2)),
			flow4(KindTransport, 17, 1, 2, udp(1, 2))},
		{"v4/udp-trailing-bytes", ipv4(v4{src: client4, dst: vip4, proto: 17, totalLen: 28}, concat(udp(7, 9), make([]byte, 18))),
			flow4(KindTransport, 17, 7, 9, udp(7, 9))},
		{"v4/udp-ports-only", ipv4(udpH, ports(7, 9, 4)), flow4(KindTransport, 17, 7, 9, ports(7, 9, 4))},
		{"v4/tcp-copy-range-truncated", ipv4(v4{src: client4, dst: vip4, proto: 6, totalLen: -1}, tcp(40000, 80)),
			flow4(KindTransport, 6, 40000, 80, tcp(40000, 80))},
		{"v4/first-fragment-udp", ipv4(v4{src: client4, dst: vip4, proto: 17, id: 0xbeef, moreFrags: true}, udp(5353, 53)),
			with(flow4(KindFirstFragment, 17, 5353, 53, udp(5353, 53)), func(p *Packet) { p.FragID = 0xbeef })},
		{"v4/first-fragment-icmp-echo", ipv4(v4{src: client4, dst: vip4, proto: 1, id: 9, moreFrags: true}, echo(8, 0x1234, 1)),
			with(flow4(KindFirstFragment, 1, 0x1234, 0x1234, echo(8, 0x1234, 1)), func(p *Packet) { p.FragID, p.ICMPType = 9, 8 })},
		{"v4/first-fragment-gre", ipv4(v4{src: client4, dst: vip4, proto: protoGRE, id: 9, moreFrags: true}, make([]byte, 16)),
			with(flow4(KindFirstFragment, protoGRE, 0, 0, make([]byte, 16)), func(p *Packet) { p.FragID = 9 })},
		{"v4/later-fragment", ipv4(v4{src: client4, dst: vip4, proto: 17, id: 0xbeef, moreFrags: true, fragOffset: 185}, make([]byte, 64)),
			with(flow4(KindLaterFragment, 17, 0, 0, nil), func(p *Packet) { p.FragID = 0xbeef })},
		{"v4/last-fragment", ipv4(v4{src: client4, dst: vip4, proto: 6, id: 1, fragOffset: 8191}, make([]byte, 8)),
			with(flow4(KindLaterFragment, 6, 0, 0, nil), func(p *Packet) { p.FragID = 1 })},
		{"v4/later-fragment-offset-4096", ipv4(v4{src: client4, dst: vip4, proto: 132, id: 2, fragOffset: 4096}, make([]byte, 8)),
			with(flow4(KindLaterFragment, 132, 0, 0, nil), func(p *Packet) { p.FragID = 2 })},
		{"v4/echo-request", ipv4(icmpH, echo(8, 0x1234, 7)),
			with(flow4(KindICMPEcho, 1, 0x1234, 0x1234, echo(8, 0x1234, 7)), func(p *Packet) { p.ICMPType = 8 })},
		{"v4/echo-reply", ipv4(icmpH, echo(0, 0xffff, 7)),
			flow4(KindICMPEcho, 1, 0xffff, 0xffff, echo(0, 0xffff, 7))},
		{"v4/frag-needed-tcp", icmpErr(3, 4, replyTCP), errFlow(6, 3, 4, 40000, 80, tcp(80, 40000))},
		{"v4/port-unreachable-udp-cut", icmpErr(3, 3, cut(replyUDPOpts, 36+8)), errFlow(17, 3, 3, 5353, 53, udp(53, 5353))},
		{"v4/time-exceeded-udp-options", icmpErr(11, 0, replyUDPOpts), errFlow(17, 11, 0, 5353, 53, udp(53, 5353))},
		{"v4/parameter-problem-udp", icmpErr(12, 0, replyUDPOpts), errFlow(17, 12, 0, 5353, 53, udp(53, 5353))},
		{"v4/unreachable-sctp", unreach(cut(ipv4(proto(reply, 132), sctp(3868, 3869)), 28)),
			errFlow(132, 3, 1, 3869, 3868, ports(3868, 3869, 8))},
		{"v4/unreachable-echo", unreach(ipv4(proto(reply, 1), echo(0, 77, 1))),
			errFlow(1, 3, 1, 77, 77, echo(0, 77, 1))},
		{"v4/unreachable-gre", unreach(ipv4(proto(reply, protoGRE), make([]byte, 8))),
			errFlow(protoGRE, 3, 1, 0, 0, make([]byte, 8))},
		{"v4/unreachable-first-fragment", unreach(ipv4(v4{src: vip4, dst: client4, proto: 17, moreFrags: true, id: 3}, udp(53, 5353))),
			errFlow(17, 3, 1, 5353, 53, udp(53, 5353))},
		{"v4/unreachable-embedded-error", unreach(ipv4(proto(reply, 1), icmp(11, 0, 0, nil))),
			fromRouter(KindOther, 3, 1, icmp(3, 1, 0, ipv4(proto(reply, 1), icmp(11, 0, 0, nil))))},
		{"v4/unreachable-embedded-later-fragment",
			unreach(ipv4(v4{src: vip4, dst: client4, proto: 17, fragOffset: 1}, make([]byte, 8))),
			fromRouter(KindOther, 3, 1, icmp(3, 1, 0, ipv4(v4{src: vip4, dst: client4, proto: 17, fragOffset: 1}, make([]byte, 8))))},
		{"v4/redirect", ipv4(icmpH, icmp(5, 1, 0, replyTCP)),
			with(flow4(KindOther, 1, 0, 0, icmp(5, 1, 0, replyTCP)), func(p *Packet) { p.ICMPType, p.ICMPCode = 5, 1 })},
		{"v4/timestamp", ipv4(icmpH, icmp(13, 0, 0, make([]byte, 12))),
			with(flow4(KindOther, 1, 0, 0, icmp(13, 0, 0, make([]byte, 12))), func(p *Packet) { p.ICMPType = 13 })},
		{"v4/gre", ipv4(proto(h, protoGRE), []byte{0, 0, 8, 0}), flow4(KindOther, protoGRE, 0, 0, []byte{0, 0, 8, 0})},
		{"v4/icmpv6-proto", ipv4(proto(h, 58), echo(128, 1, 1)), flow4(KindOther, 58, 0, 0, echo(128, 1, 1))},

		{"v4/invalid/empty", nil, invalid(ErrTruncated)},
		{"v4/invalid/version5", []byte{0x55, 0, 0, 20}, invalid(ErrBadVersion)},
		{"v4/invalid/version0", make([]byte, 40), invalid(ErrBadVersion)},
		{"v4/invalid/short-header", cut(ipv4(tcpH, tcp(1, 2)), 19), invalid(ErrTruncated)},
		{"v4/invalid/ihl4", ipv4(v4{src: client4, dst: vip4, proto: 6, ihl: 4}, tcp(1, 2)), invalid(ErrBadHeaderLength)},
		{"v4/invalid/ihl15-short-buffer", ipv4(v4{src: client4, dst: vip4, proto: 6, ihl: 15, totalLen: 100}, tcp(1, 2)), invalid(ErrTruncated)},
		{"v4/invalid/total-below-header", ipv4(v4{src: client4, dst: vip4, proto: 6, totalLen: 19}, tcp(1, 2)), invalid(ErrBadTotalLength)},
		// Total length 0 is only a BIG TCP aggregate's (DecodeGSO); see TestDecodeGSOLengths.
		{"v4/invalid/total-length-zero", ipv4(v4{src: client4, dst: vip4, proto: 6, totalLen: -2}, tcp(1, 2)), invalid(ErrBadTotalLength)},
		{"v4/invalid/total-below-options", ipv4(v4{src: client4, dst: vip4, proto: 6, options: options, totalLen: 30}, tcp(1, 2)), invalid(ErrBadTotalLength)},
		{"v4/invalid/tcp-3-bytes", ipv4(tcpH, []byte{1, 2, 3}), invalid(ErrTruncated)},
		{"v4/invalid/udp-cut-by-total-length", ipv4(v4{src: client4, dst: vip4, proto: 17, totalLen: 22}, udp(1, 2)), invalid(ErrTruncated)},
		{"v4/invalid/icmp-7-bytes", ipv4(icmpH, cut(echo(8, 1, 1), 7)), invalid(ErrTruncated)},
		{"v4/invalid/first-fragment-tcp-2-bytes", ipv4(v4{src: client4, dst: vip4, proto: 6, moreFrags: true}, []byte{1, 2}), invalid(ErrTruncated)},
		{"v4/invalid/first-fragment-icmp-4-bytes", ipv4(v4{src: client4, dst: vip4, proto: 1, moreFrags: true}, []byte{8, 0, 0, 0}), invalid(ErrTruncated)},
		{"v4/invalid/unreachable-empty", icmpErr(3, 0, nil), invalid(ErrTruncated)},
		{"v4/invalid/unreachable-embedded-ipv6", unreach(ipv6(v6{src: vip6, dst: client6, proto: 17}, udp(1, 2))), invalid(ErrBadVersion)},
		{"v4/invalid/unreachable-embedded-bad-version", unreach([]byte{0x70, 0, 0, 0}), invalid(ErrBadVersion)},
		{"v4/invalid/unreachable-embedded-header-cut", unreach(cut(replyTCP, 19)), invalid(ErrTruncated)},
		{"v4/invalid/unreachable-embedded-options-cut", unreach(cut(replyUDPOpts, 30)), invalid(ErrTruncated)},
		{"v4/invalid/unreachable-embedded-udp-4-bytes", unreach(cut(replyUDPOpts, 36+4)), invalid(ErrTruncated)},
		{"v4/invalid/unreachable-embedded-tcp-7-bytes", unreach(cut(replyTCP, 27)), invalid(ErrTruncated)},
		{"v4/invalid/unreachable-embedded-echo-7-bytes", unreach(cut(ipv4(proto(reply, 1), echo(8, 1, 1)), 27)), invalid(ErrTruncated)},
		{"v4/invalid/unreachable-embedded-ihl3", unreach(ipv4(v4{src: vip4, dst: client4, proto: 6, ihl: 3}, tcp(1, 2))), invalid(ErrBadHeaderLength)},
		{"v4/invalid/unreachable-embedded-total-below-header", unreach(ipv4(v4{src: vip4, dst: client4, proto: 6, totalLen: 8}, tcp(1, 2))), invalid(ErrBadTotalLength)},
	}
}
