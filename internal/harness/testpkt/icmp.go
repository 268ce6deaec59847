package testpkt

import (
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// ICMP types used by the builders.
const (
	ICMPv4EchoRequest     = 8
	ICMPv4Unreachable     = 3
	ICMPv4FragNeeded      = 4 // code of ICMPv4Unreachable
	ICMPv4TimeExceeded    = 11
	ICMPv6Unreachable     = 1
	ICMPv6PacketTooBig    = 2
	ICMPv6TimeExceeded    = 3
	ICMPv6EchoRequest     = 128
	icmpErrorQuoteIPv4Max = 576 - 20 - 8
	icmpErrorQuoteIPv6Max = 1280 - 40 - 8
)

// Echo returns an ICMP or ICMPv6 echo request from src to dst.
func Echo(src, dst netip.Addr, id, seq uint16) []byte {
	msg := echoMessage(src, dst, id, seq, []byte("sllbrd-ping-0123456789"))
	if src.Is4() {
		return ip(src, dst, layers.IPProtocolICMPv4, msg, Options{})
	}
	return ip(src, dst, layers.IPProtocolICMPv6, msg, Options{})
}

// echoMessage returns the ICMP or ICMPv6 echo request message (no IP
// header) with its checksum.
func echoMessage(src, dst netip.Addr, id, seq uint16, payload []byte) []byte {
	buf := gopacket.NewSerializeBuffer()
	if src.Is4() {
		ic := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(ICMPv4EchoRequest, 0), Id: id, Seq: seq}
		if err := gopacket.SerializeLayers(buf, serialize, ic, gopacket.Payload(payload)); err != nil {
			panic(err)
		}
		return append([]byte(nil), buf.Bytes()...)
	}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(ICMPv6EchoRequest, 0)}
	_ = ic.SetNetworkLayerForChecksum(netLayer(src, dst, layers.IPProtocolICMPv6))
	echo := &layers.ICMPv6Echo{Identifier: id, SeqNumber: seq}
	if err := gopacket.SerializeLayers(buf, serialize, ic, echo, gopacket.Payload(payload)); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// ICMPError returns an ICMP (IPv4) or ICMPv6 error sent by router to the
// source of original, quoting as much of original as the RFCs allow. For
// fragmentation-needed and packet-too-big, mtu is the next-hop MTU.
func ICMPError(router netip.Addr, original []byte, typ, code uint8, mtu uint16) []byte {
	src, _ := addrs(original)
	buf := gopacket.NewSerializeBuffer()
	if router.Is4() {
		q := original[:min(len(original), icmpErrorQuoteIPv4Max)]
		ic := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, code)}
		if typ == ICMPv4Unreachable && code == ICMPv4FragNeeded {
			ic.Seq = mtu // the next-hop MTU occupies the low 16 bits of the rest-of-header word
		}
		if err := gopacket.SerializeLayers(buf, serialize, ic, gopacket.Payload(q)); err != nil {
			panic(err)
		}
		return ip(router, src, layers.IPProtocolICMPv4, buf.Bytes(), Options{})
	}
	q := original[:min(len(original), icmpErrorQuoteIPv6Max)]
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, code)}
	_ = ic.SetNetworkLayerForChecksum(netLayer(router, src, layers.IPProtocolICMPv6))
	rest := make([]byte, 4)
	if typ == ICMPv6PacketTooBig {
		rest[2], rest[3] = byte(mtu>>8), byte(mtu)
	}
	if err := gopacket.SerializeLayers(buf, serialize, ic, gopacket.Payload(append(rest, q...))); err != nil {
		panic(err)
	}
	return ip(router, src, layers.IPProtocolICMPv6, buf.Bytes(), Options{})
}

// addrs returns the source and destination of a raw IP packet.
func addrs(p []byte) (src, dst netip.Addr) {
	if p[0]>>4 == 4 {
		return netip.AddrFrom4([4]byte(p[12:16])), netip.AddrFrom4([4]byte(p[16:20]))
	}
	return netip.AddrFrom16([16]byte(p[8:24])), netip.AddrFrom16([16]byte(p[24:40]))
}
