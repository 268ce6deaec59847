package testpkt

import (
	"net"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Fragments returns f's datagram carrying payload split into IP fragments
// whose fragmentable part holds at most size bytes (rounded down to a
// multiple of 8). The first fragment carries the transport header.
func Fragments(f Flow, payload []byte, size int, id uint32) [][]byte {
	data := transport(f, payload)
	size &^= 7
	if size < 8 {
		size = 8
	}
	var out [][]byte
	for off := 0; off < len(data); off += size {
		end := min(off+size, len(data))
		more := end < len(data)
		out = append(out, fragment(f, data[off:end], off, more, id))
	}
	return out
}

func fragment(f Flow, chunk []byte, off int, more bool, id uint32) []byte {
	buf := gopacket.NewSerializeBuffer()
	if f.Src.Is4() {
		h := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocol(f.Proto), Id: uint16(id),
			FragOffset: uint16(off / 8), SrcIP: net.IP(f.Src.AsSlice()), DstIP: net.IP(f.Dst.AsSlice())}
		if more {
			h.Flags = layers.IPv4MoreFragments
		}
		if err := gopacket.SerializeLayers(buf, serialize, h, gopacket.Payload(chunk)); err != nil {
			panic(err)
		}
		return append([]byte(nil), buf.Bytes()...)
	}
	h := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolIPv6Fragment,
		SrcIP: net.IP(f.Src.AsSlice()), DstIP: net.IP(f.Dst.AsSlice())}
	fr := &layers.IPv6Fragment{NextHeader: layers.IPProtocol(f.Proto), FragmentOffset: uint16(off / 8),
		MoreFragments: more, Identification: id}
	if err := gopacket.SerializeLayers(buf, serialize, h, fr, gopacket.Payload(chunk)); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}
