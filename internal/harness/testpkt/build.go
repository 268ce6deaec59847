package testpkt

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Flow is a transport flow; Proto is 6 (TCP), 17 (UDP) or 132 (SCTP).
type Flow struct {
	Src, Dst         netip.Addr
	Proto            uint8
	SrcPort, DstPort uint16
}

// Reverse returns the flow in the other direction.
func (f Flow) Reverse() Flow {
	return Flow{Src: f.Dst, Dst: f.Src, Proto: f.Proto, SrcPort: f.DstPort, DstPort: f.SrcPort}
}

// Options change how a packet is built.
type Options struct {
	IPv4Options bool // add a 4-byte NOP/EOL IPv4 option (IHL 6)
	IPv6Ext     bool // add hop-by-hop and destination-options headers
	TTL         uint8
}

var serialize = gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}

// Packet returns a whole IP packet of f carrying payload.
func Packet(f Flow, payload []byte, o Options) []byte {
	l4 := transport(f, payload)
	return ip(f.Src, f.Dst, layers.IPProtocol(f.Proto), l4, o)
}

// Transport returns the transport header and payload of f (no IP header),
// with checksums for f's addresses.
func transport(f Flow, payload []byte) []byte {
	buf := gopacket.NewSerializeBuffer()
	var ls []gopacket.SerializableLayer
	var nl gopacket.NetworkLayer = netLayer(f.Src, f.Dst, layers.IPProtocol(f.Proto))
	switch f.Proto {
	case 6:
		t := &layers.TCP{SrcPort: layers.TCPPort(f.SrcPort), DstPort: layers.TCPPort(f.DstPort), Seq: 1, Ack: 1, ACK: true, PSH: true, Window: 65535}
		_ = t.SetNetworkLayerForChecksum(nl)
		ls = append(ls, t)
	case 17:
		u := &layers.UDP{SrcPort: layers.UDPPort(f.SrcPort), DstPort: layers.UDPPort(f.DstPort)}
		_ = u.SetNetworkLayerForChecksum(nl)
		ls = append(ls, u)
	case 132:
		ls = append(ls, &layers.SCTP{SrcPort: layers.SCTPPort(f.SrcPort), DstPort: layers.SCTPPort(f.DstPort), VerificationTag: 0x01020304},
			&layers.SCTPData{SCTPChunk: layers.SCTPChunk{Type: layers.SCTPChunkTypeData, Length: uint16(16 + len(payload))},
				BeginFragment: true, EndFragment: true, TSN: 1, Payload: payload})
		payload = nil // carried inside the DATA chunk
	default:
		panic(fmt.Sprintf("testpkt: unsupported protocol %d", f.Proto))
	}
	ls = append(ls, gopacket.Payload(payload))
	if err := gopacket.SerializeLayers(buf, serialize, ls...); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func netLayer(src, dst netip.Addr, proto layers.IPProtocol) gopacket.NetworkLayer {
	if src.Is4() {
		return &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: net.IP(src.AsSlice()), DstIP: net.IP(dst.AsSlice())}
	}
	return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: net.IP(src.AsSlice()), DstIP: net.IP(dst.AsSlice())}
}

// ip wraps an upper-layer payload of protocol proto in an IP header.
func ip(src, dst netip.Addr, proto layers.IPProtocol, upper []byte, o Options) []byte {
	ttl := o.TTL
	if ttl == 0 {
		ttl = 64
	}
	buf := gopacket.NewSerializeBuffer()
	var ls []gopacket.SerializableLayer
	if src.Is4() {
		h := &layers.IPv4{Version: 4, TTL: ttl, Protocol: proto, Id: 0x1234,
			SrcIP: net.IP(src.AsSlice()), DstIP: net.IP(dst.AsSlice())}
		if o.IPv4Options {
			h.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		}
		ls = append(ls, h)
	} else {
		h := &layers.IPv6{Version: 6, HopLimit: ttl, NextHeader: proto,
			SrcIP: net.IP(src.AsSlice()), DstIP: net.IP(dst.AsSlice())}
		ls = append(ls, h)
		if o.IPv6Ext {
			h.NextHeader = layers.IPProtocolIPv6HopByHop
			hbh := &layers.IPv6HopByHop{}
			hbh.NextHeader = layers.IPProtocolIPv6Destination
			hbh.Options = []*layers.IPv6HopByHopOption{{OptionType: 1, OptionData: []byte{0, 0, 0, 0}}}
			dst := &layers.IPv6Destination{}
			dst.NextHeader = proto
			dst.Options = []*layers.IPv6DestinationOption{{OptionType: 1, OptionData: []byte{0, 0, 0, 0}}}
			ls = append(ls, hbh, dst)
		}
	}
	ls = append(ls, gopacket.Payload(upper))
	if err := gopacket.SerializeLayers(buf, serialize, ls...); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}
