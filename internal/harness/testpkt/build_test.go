package testpkt

import (
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var (
	c4, v4 = netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("20.0.0.1")
	c6, v6 = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("2001:db8::1")
)

func decode(t *testing.T, b []byte) gopacket.Packet {
	t.Helper()
	first := layers.LayerTypeIPv4
	if b[0]>>4 == 6 {
		first = layers.LayerTypeIPv6
	}
	p := gopacket.NewPacket(b, first, gopacket.Default)
	if el := p.ErrorLayer(); el != nil {
		t.Fatalf("gopacket cannot decode what we built: %v", el.Error())
	}
	return p
}

func TestPacketsDecodeWithGopacket(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Flow
		o    Options
		want gopacket.LayerType
	}{
		{"tcp4", Flow{c4, v4, 6, 40000, 80}, Options{}, layers.LayerTypeTCP},
		{"udp4 options", Flow{c4, v4, 17, 40000, 5000}, Options{IPv4Options: true}, layers.LayerTypeUDP},
		{"sctp6 ext", Flow{c6, v6, 132, 5000, 36412}, Options{IPv6Ext: true}, layers.LayerTypeSCTP},
		{"udp6", Flow{c6, v6, 17, 1, 2}, Options{}, layers.LayerTypeUDP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := decode(t, Packet(tc.f, []byte("hello"), tc.o))
			if p.Layer(tc.want) == nil {
				t.Fatalf("no %v layer in %v", tc.want, p)
			}
		})
	}
}

func TestFragmentsCoverDatagram(t *testing.T) {
	for _, f := range []Flow{{c4, v4, 17, 1000, 2000}, {c6, v6, 17, 1000, 2000}} {
		frags := Fragments(f, make([]byte, 3000), 1200, 77)
		if len(frags) != 3 {
			t.Fatalf("%v: %d fragments, want 3", f.Src, len(frags))
		}
		total := 0
		for i, b := range frags {
			p := decode(t, b)
			frag := p.NetworkLayer().LayerPayload()
			if f.Src.Is6() {
				frag = p.Layer(layers.LayerTypeIPv6Fragment).LayerPayload()
			}
			total += len(frag)
			// gopacket stops at fragments: check the UDP ports by hand.
			if i == 0 && (int(frag[0])<<8|int(frag[1]) != 1000 || int(frag[2])<<8|int(frag[3]) != 2000) {
				t.Errorf("first fragment does not start with the UDP header: % x", frag[:8])
			}
		}
		if total != 3000+8 {
			t.Errorf("fragments carry %d bytes, want 3008", total)
		}
	}
}

func TestICMPErrorQuotesOriginal(t *testing.T) {
	orig := Packet(Flow{v4, c4, 6, 80, 40000}, make([]byte, 1400), Options{})
	p := decode(t, ICMPError(netip.MustParseAddr("192.0.2.1"), orig, ICMPv4Unreachable, ICMPv4FragNeeded, 1400))
	ic := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if ic.TypeCode.Type() != 3 || ic.TypeCode.Code() != 4 || ic.Seq != 1400 {
		t.Errorf("icmp = %v seq %d", ic.TypeCode, ic.Seq)
	}
	if ip := p.NetworkLayer().(*layers.IPv4); !ip.DstIP.Equal(v4.AsSlice()) {
		t.Errorf("error sent to %v, want the original source %v", ip.DstIP, v4)
	}
	orig6 := Packet(Flow{v6, c6, 17, 53, 40000}, make([]byte, 1400), Options{})
	p6 := decode(t, ICMPError(netip.MustParseAddr("2001:db8:ff::1"), orig6, ICMPv6PacketTooBig, 0, 1280))
	if got := len(p6.Data()); got > 1280 {
		t.Errorf("ICMPv6 error is %d bytes, more than the minimum MTU", got)
	}
	_ = decode(t, Echo(c6, v6, 7, 1))
	_ = decode(t, Echo(c4, v4, 7, 1))
}

func TestFragmentsWithHeadersAndEcho(t *testing.T) {
	f := Flow{c6, v6, 17, 1000, 2000}
	frags := FragmentsWith(f, make([]byte, 3000), 1200, 9, FragmentHeaders{AH: true, DestOpts: true})
	if len(frags) != 3 {
		t.Fatalf("%d fragments, want 3", len(frags))
	}
	first := decode(t, frags[0]).Layer(layers.LayerTypeIPv6Fragment).(*layers.IPv6Fragment)
	if first.NextHeader != layers.IPProtocolAH || first.Identification != 9 {
		t.Errorf("fragment header names %v id %d, want AH id 9", first.NextHeader, first.Identification)
	}
	// AH (24 bytes), destination options (8), then the UDP header.
	if udp := first.Payload[32:]; int(udp[0])<<8|int(udp[1]) != 1000 || first.Payload[24] != 17 {
		t.Errorf("fragmentable part does not chain AH -> destination options -> UDP: % x", first.Payload[:40])
	}
	for _, src := range []netip.Addr{c4, c6} {
		dst := v4
		if src.Is6() {
			dst = v6
		}
		echo := EchoFragments(src, dst, 7, 1, make([]byte, 3000), 1200, 11)
		if len(echo) != 3 {
			t.Fatalf("%v: %d echo fragments, want 3", src, len(echo))
		}
		var icmpType byte
		if p := decode(t, echo[0]); src.Is4() {
			icmpType = p.NetworkLayer().LayerPayload()[0]
		} else {
			icmpType = p.Layer(layers.LayerTypeIPv6Fragment).LayerPayload()[0]
		}
		if icmpType != ICMPv4EchoRequest && icmpType != ICMPv6EchoRequest {
			t.Errorf("%v: first echo fragment starts with type %d", src, icmpType)
		}
	}
}
