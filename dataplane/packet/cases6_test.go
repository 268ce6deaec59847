package packet

import "github.com/sllbrd/sllbrd/model"

func ipv6Cases() []decodeCase {
	h := func(p uint8, exts ...ext) v6 { return v6{src: client6, dst: vip6, proto: p, exts: exts} }
	reply := func(p uint8, exts ...ext) v6 { return v6{src: vip6, dst: client6, proto: p, exts: exts} }
	icmpErr := func(typ, code uint8, embedded []byte) []byte {
		return ipv6(v6{src: router6, dst: vip6, proto: 58}, icmp(typ, code, 1280, embedded))
	}
	errFlow := func(proto model.Protocol, typ, code uint8, sp, dp uint16, l4 []byte) Packet {
		return Packet{Kind: KindICMPError, Family: 6, Proto: proto, Src: c6, Dst: v6addr,
			SrcPort: sp, DstPort: dp, L4: l4, ICMPType: typ, ICMPCode: code}
	}
	fromRouter := func(k Kind, typ, code uint8, l4 []byte) Packet {
		return Packet{Kind: k, Family: 6, Proto: 58, Src: r6, Dst: v6addr, L4: l4, ICMPType: typ, ICMPCode: code}
	}
	fragID := func(id uint32) func(*Packet) { return func(p *Packet) { p.FragID = id } }
	hbh, rt, dst := optsExt(0, 0), optsExt(43, 1), optsExt(60, 2)
	nine := make([]ext, 9)
	for i := range nine {
		nine[i] = optsExt(60, 0)
	}
	replyTCPExt := ipv6(reply(6, hbh, dst), tcp(443, 50000))
	replyUDP := ipv6(reply(17), udp(53, 5353))
	tooBig := func(embedded []byte) []byte { return icmpErr(2, 0, embedded) }

	return []decodeCase{
		{"v6/tcp", ipv6(h(6), tcp(50000, 443)), flow6(KindTransport, 6, 50000, 443, tcp(50000, 443))},
		{"v6/udp", ipv6(h(17), udp(5353, 53)), flow6(KindTransport, 17, 5353, 53, udp(5353, 53))},
		{"v6/sctp", ipv6(h(132), sctp(3868, 3869)), flow6(KindTransport, 132, 3868, 3869, sctp(3868, 3869))},
		{"v6/hop-by-hop-tcp", ipv6(h(6, hbh), tcp(1, 2)), flow6(KindTransport, 6, 1, 2, tcp(1, 2))},
		{"v6/hbh-routing-destopts-udp", ipv6(h(17, hbh, rt, dst), udp(3, 4)), flow6(KindTransport, 17, 3, 4, udp(3, 4))},
		{"v6/ah-tcp", ipv6(h(6, ahExt(4)), tcp(5, 6)), flow6(KindTransport, 6, 5, 6, tcp(5, 6))},
		{"v6/largest-destopts-udp", ipv6(h(17, optsExt(60, 255)), udp(7, 8)), flow6(KindTransport, 17, 7, 8, udp(7, 8))},
		{"v6/eight-extension-headers", ipv6(h(17, nine[:8]...), udp(7, 8)), flow6(KindTransport, 17, 7, 8, udp(7, 8))},
		{"v6/atomic-fragment", ipv6(h(17, fragExt(0, false, 5)), udp(9, 10)), flow6(KindTransport, 17, 9, 10, udp(9, 10))},
		{"v6/trailing-bytes", ipv6(v6{src: client6, dst: vip6, proto: 17, payloadLen: 8}, concat(udp(1, 2), make([]byte, 10))),
			flow6(KindTransport, 17, 1, 2, udp(1, 2))},
		{"v6/copy-range-truncated", ipv6(v6{src: client6, dst: vip6, proto: 6, payloadLen: -1, exts: []ext{hbh}}, tcp(1, 2)),
			flow6(KindTransport, 6, 1, 2, tcp(1, 2))},
		{"v6/jumbo-zero-payload-length", ipv6(v6{src: client6, dst: vip6, proto: 17, payloadLen: -2, exts: []ext{hbh}}, udp(1, 2)),
			flow6(KindTransport, 17, 1, 2, udp(1, 2))},
		{"v6/jumbo-option-copy-range-truncated", ipv6(v6{src: client6, dst: vip6, proto: 17, payloadLen: -2, exts: []ext{jumboExt(70000, false)}}, udp(1, 2)),
			flow6(KindTransport, 17, 1, 2, udp(1, 2))},
		{"v6/first-fragment-udp", ipv6(h(17, fragExt(0, true, 0xdeadbeef)), udp(5353, 53)),
			with(flow6(KindFirstFragment, 17, 5353, 53, udp(5353, 53)), fragID(0xdeadbeef))},
		{"v6/hbh-first-fragment-destopts-tcp", ipv6(h(6, hbh, fragExt(0, true, 77), dst), tcp(1, 2)),
			with(flow6(KindFirstFragment, 6, 1, 2, tcp(1, 2)), fragID(77))},
		{"v6/first-fragment-echo", ipv6(h(58, fragExt(0, true, 78)), echo(128, 0x4321, 1)),
			with(flow6(KindFirstFragment, 58, 0x4321, 0x4321, echo(128, 0x4321, 1)), func(p *Packet) { p.FragID, p.ICMPType = 78, 128 })},
		{"v6/later-fragment", ipv6(h(17, fragExt(100, true, 0xdeadbeef)), make([]byte, 64)),
			with(flow6(KindLaterFragment, 17, 0, 0, nil), fragID(0xdeadbeef))},
		{"v6/last-fragment-after-hbh", ipv6(h(6, hbh, fragExt(8191, false, 1)), make([]byte, 8)),
			with(flow6(KindLaterFragment, 6, 0, 0, nil), fragID(1))},
		{"v6/later-fragment-of-destopts", ipv6(h(17, fragExt(1, false, 2), dst), udp(1, 2)),
			with(flow6(KindLaterFragment, 60, 0, 0, nil), fragID(2))},
		{"v6/esp", ipv6(h(protoESP), make([]byte, 16)), flow6(KindOther, protoESP, 0, 0, make([]byte, 16))},
		{"v6/no-next-header", ipv6(h(protoNoNext, dst), nil), flow6(KindOther, protoNoNext, 0, 0, []byte{})},
		{"v6/icmpv4-proto", ipv6(h(1), echo(8, 1, 1)), flow6(KindOther, 1, 0, 0, echo(8, 1, 1))},
		{"v6/echo-request", ipv6(h(58), echo(128, 9, 1)),
			with(flow6(KindICMPEcho, 58, 9, 9, echo(128, 9, 1)), func(p *Packet) { p.ICMPType = 128 })},
		{"v6/echo-reply-after-destopts", ipv6(h(58, dst), echo(129, 9, 1)),
			with(flow6(KindICMPEcho, 58, 9, 9, echo(129, 9, 1)), func(p *Packet) { p.ICMPType = 129 })},
		{"v6/neighbor-solicitation", ipv6(h(58), icmp(135, 0, 0, make([]byte, 16))),
			with(flow6(KindOther, 58, 0, 0, icmp(135, 0, 0, make([]byte, 16))), func(p *Packet) { p.ICMPType = 135 })},
		{"v6/parameter-problem", ipv6(h(58), icmp(4, 1, 40, replyUDP)), errFlow(17, 4, 1, 5353, 53, udp(53, 5353))},
		{"v6/unreachable-tcp-ext", icmpErr(1, 4, replyTCPExt), errFlow(6, 1, 4, 50000, 443, tcp(443, 50000))},
		{"v6/packet-too-big-udp", tooBig(replyUDP), errFlow(17, 2, 0, 5353, 53, udp(53, 5353))},
		{"v6/time-exceeded-sctp-cut", icmpErr(3, 0, cut(ipv6(reply(132, rt), sctp(1, 2)), 40+16+8)),
			errFlow(132, 3, 0, 2, 1, ports(1, 2, 8))},
		{"v6/too-big-embedded-echo", tooBig(ipv6(reply(58), echo(129, 5, 5))), errFlow(58, 2, 0, 5, 5, echo(129, 5, 5))},
		{"v6/too-big-embedded-first-fragment", tooBig(ipv6(reply(17, fragExt(0, true, 4)), udp(53, 5353))),
			errFlow(17, 2, 0, 5353, 53, udp(53, 5353))},
		{"v6/too-big-embedded-esp", tooBig(ipv6(reply(protoESP), make([]byte, 8))), errFlow(protoESP, 2, 0, 0, 0, make([]byte, 8))},
		{"v6/too-big-embedded-error", tooBig(ipv6(reply(58), icmp(1, 0, 0, nil))),
			fromRouter(KindOther, 2, 0, icmp(2, 0, 1280, ipv6(reply(58), icmp(1, 0, 0, nil))))},
		{"v6/too-big-embedded-later-fragment", tooBig(ipv6(reply(17, fragExt(3, true, 4)), make([]byte, 8))),
			fromRouter(KindOther, 2, 0, icmp(2, 0, 1280, ipv6(reply(17, fragExt(3, true, 4)), make([]byte, 8))))},

		{"v6/invalid/short-header", cut(ipv6(h(6), tcp(1, 2)), 39), invalid(ErrTruncated)},
		{"v6/invalid/udp-3-bytes", ipv6(h(17), []byte{1, 2, 3}), invalid(ErrTruncated)},
		{"v6/invalid/payload-length-cuts-udp", ipv6(v6{src: client6, dst: vip6, proto: 17, payloadLen: 2}, udp(1, 2)), invalid(ErrTruncated)},
		// Zero payload length without a hop-by-hop header and outside a GSO
		// aggregate: the kernel trims the packet to its header.
		{"v6/invalid/zero-payload-length-udp", ipv6(v6{src: client6, dst: vip6, proto: 17, payloadLen: -2}, udp(1, 2)), invalid(ErrTruncated)},
		{"v6/invalid/jumbo-below-65536", ipv6(v6{src: client6, dst: vip6, proto: 17, payloadLen: -2, exts: []ext{jumboExt(65535, false)}}, udp(1, 2)),
			invalid(ErrBadPayloadLength)},
		{"v6/invalid/jumbo-misaligned", ipv6(v6{src: client6, dst: vip6, proto: 17, payloadLen: -2, exts: []ext{jumboExt(70000, true)}}, udp(1, 2)),
			invalid(ErrBadPayloadLength)},
		{"v6/invalid/ext-header-7-bytes", cut(ipv6(h(6, hbh), tcp(1, 2)), 47), invalid(ErrTruncated)},
		{"v6/invalid/ext-header-longer-than-packet", cut(ipv6(h(6, rt), tcp(1, 2)), 50), invalid(ErrTruncated)},
		{"v6/invalid/ah-longer-than-packet", cut(ipv6(h(6, ahExt(4)), tcp(1, 2)), 60), invalid(ErrTruncated)},
		{"v6/invalid/fragment-header-cut", cut(ipv6(h(17, fragExt(1, true, 1)), make([]byte, 8)), 46), invalid(ErrTruncated)},
		{"v6/invalid/nine-extension-headers", ipv6(h(17, nine...), udp(7, 8)), invalid(ErrTooManyExtensionHeaders)},
		{"v6/invalid/two-fragment-headers", ipv6(h(17, fragExt(0, true, 1), fragExt(0, true, 1)), udp(7, 8)), invalid(ErrBadFragment)},
		{"v6/invalid/atomic-then-fragment", ipv6(h(17, fragExt(0, false, 1), fragExt(5, false, 1)), udp(7, 8)), invalid(ErrBadFragment)},
		{"v6/invalid/first-fragment-udp-2-bytes", ipv6(h(17, fragExt(0, true, 1)), []byte{1, 2}), invalid(ErrTruncated)},
		{"v6/invalid/echo-7-bytes", ipv6(h(58), cut(echo(128, 1, 1), 7)), invalid(ErrTruncated)},
		{"v6/invalid/too-big-empty", tooBig(nil), invalid(ErrTruncated)},
		{"v6/invalid/too-big-embedded-ipv4", tooBig(ipv4(v4{src: vip4, dst: client4, proto: 17}, udp(1, 2))), invalid(ErrBadVersion)},
		{"v6/invalid/too-big-embedded-header-cut", tooBig(cut(replyUDP, 39)), invalid(ErrTruncated)},
		{"v6/invalid/too-big-embedded-ext-cut", tooBig(cut(replyTCPExt, 60)), invalid(ErrTruncated)},
		{"v6/invalid/too-big-embedded-udp-4-bytes", tooBig(cut(replyUDP, 44)), invalid(ErrTruncated)},
		{"v6/invalid/too-big-embedded-nine-ext", tooBig(ipv6(reply(17, nine...), udp(1, 2))), invalid(ErrTooManyExtensionHeaders)},
	}
}
