package testpkt

import (
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Fragments returns f's datagram carrying payload split into IP fragments
// whose fragmentable part holds at most size bytes (rounded down to a
// multiple of 8). The first fragment carries the transport header.
func Fragments(f Flow, payload []byte, size int, id uint32) [][]byte {
	return split(f.Src, f.Dst, f.Proto, transport(f, payload), size, id)
}

// FragmentHeaders are IPv6 extension headers of the fragmentable part of a
// datagram, between the fragment header and the transport header (RFC 8200
// section 4.5): the fragment header then names the first of them.
type FragmentHeaders struct {
	AH       bool // an Authentication Header (24 bytes, zero SPI and ICV)
	DestOpts bool // a Destination Options header (8 bytes of padding)
}

// FragmentsWith is Fragments for an IPv6 flow whose fragmentable part
// starts with the headers h, AH first.
func FragmentsWith(f Flow, payload []byte, size int, id uint32, h FragmentHeaders) [][]byte {
	next, data := f.Proto, transport(f, payload)
	if h.DestOpts {
		next, data = 60, append([]byte{next, 0, 1, 4, 0, 0, 0, 0}, data...)
	}
	if h.AH {
		ah := make([]byte, 24)
		ah[0], ah[1] = next, 4 // length in 4-byte words minus 2
		next, data = 51, append(ah, data...)
	}
	return split(f.Src, f.Dst, next, data, size, id)
}

// EchoFragments returns an ICMP or ICMPv6 echo request from src to dst
// carrying payload, split as Fragments splits a datagram.
func EchoFragments(src, dst netip.Addr, echoID, seq uint16, payload []byte, size int, id uint32) [][]byte {
	if src.Is4() {
		return split(src, dst, 1, echoMessage(src, dst, echoID, seq, payload), size, id)
	}
	return split(src, dst, 58, echoMessage(src, dst, echoID, seq, payload), size, id)
}

// split cuts data, the fragmentable part whose first header is next, into
// fragments of at most size bytes (rounded down to a multiple of 8).
func split(src, dst netip.Addr, next uint8, data []byte, size int, id uint32) [][]byte {
	size &^= 7
	if size < 8 {
		size = 8
	}
	var out [][]byte
	for off := 0; off < len(data); off += size {
		end := min(off+size, len(data))
		out = append(out, fragment(src, dst, next, data[off:end], off, end < len(data), id))
	}
	return out
}

func fragment(src, dst netip.Addr, next uint8, chunk []byte, off int, more bool, id uint32) []byte {
	buf := gopacket.NewSerializeBuffer()
	if src.Is4() {
		h := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocol(next), Id: uint16(id),
			FragOffset: uint16(off / 8), SrcIP: net.IP(src.AsSlice()), DstIP: net.IP(dst.AsSlice())}
		if more {
			h.Flags = layers.IPv4MoreFragments
		}
		if err := gopacket.SerializeLayers(buf, serialize, h, gopacket.Payload(chunk)); err != nil {
			panic(err)
		}
		return append([]byte(nil), buf.Bytes()...)
	}
	h := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolIPv6Fragment,
		SrcIP: net.IP(src.AsSlice()), DstIP: net.IP(dst.AsSlice())}
	fr := &layers.IPv6Fragment{NextHeader: layers.IPProtocol(next), FragmentOffset: uint16(off / 8),
		MoreFragments: more, Identification: id}
	if err := gopacket.SerializeLayers(buf, serialize, h, fr, gopacket.Payload(chunk)); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}
