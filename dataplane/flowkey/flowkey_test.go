package flowkey

import (
	"net/netip"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/maglev"
	"github.com/sllbrd/sllbrd/model"
)

func TestLen(t *testing.T) {
	for _, tc := range []struct {
		family    uint8
		proto     model.Protocol
		portsOnly bool
		want      int
	}{{4, model.ProtoTCP, false, 16}, {6, model.ProtoUDP, false, 40}, {4, model.ProtoSCTP, true, 8}, {6, model.ProtoSCTP, true, 8},
		{6, model.ProtoSCTP, false, 40}, {4, model.ProtoTCP, true, 16}, {4, model.ProtoICMP, false, 20}, {6, model.ProtoICMPv6, true, 44}} {
		if got := Len(tc.family, tc.proto, tc.portsOnly); got != tc.want {
			t.Errorf("Len(%d, %v, %v) = %d, want %d", tc.family, tc.proto, tc.portsOnly, got, tc.want)
		}
	}
	if Len(6, model.ProtoICMPv6, false) != MaxLen {
		t.Errorf("MaxLen %d, an IPv6 echo's key is %d", MaxLen, Len(6, model.ProtoICMPv6, false))
	}
}

// TestHashLaysOutRegisters: the hash is JHash over the fields padded to
// registers, written out by hand here.
func TestHashLaysOutRegisters(t *testing.T) {
	v4 := &packet.Packet{Family: 4, Proto: model.ProtoUDP, Src: netip.MustParseAddr("10.0.0.1"),
		Dst: netip.MustParseAddr("20.0.0.1"), SrcPort: 0x1234, DstPort: 80}
	key4 := []byte{10, 0, 0, 1, 20, 0, 0, 1, 0x12, 0x34, 0, 80, 17, 0, 0, 0}
	v6 := &packet.Packet{Family: 6, Proto: model.ProtoSCTP, Src: netip.MustParseAddr("fd00::1"),
		Dst: netip.MustParseAddr("2001:db8::1"), SrcPort: 5000, DstPort: 0xabcd}
	key6 := append(append(netip.MustParseAddr("fd00::1").AsSlice(), netip.MustParseAddr("2001:db8::1").AsSlice()...),
		0x13, 0x88, 0xab, 0xcd, 132, 0, 0, 0)
	echo4 := &packet.Packet{Family: 4, Proto: model.ProtoICMP, Src: v4.Src, Dst: v4.Dst, SrcPort: 0x0102, DstPort: 0x0102}
	keyEcho4 := []byte{10, 0, 0, 1, 20, 0, 0, 1, 1, 2, 0, 0, 1, 2, 0, 0, 1, 0, 0, 0}
	for _, tc := range []struct {
		name      string
		p         *packet.Packet
		sctpPorts bool
		key       []byte
	}{
		{"IPv4 UDP", v4, true, key4},
		{"IPv6 SCTP five-tuple", v6, false, key6},
		{"IPv6 SCTP ports only", v6, true, key6[32:]},
		{"IPv4 echo", echo4, true, keyEcho4},
	} {
		if got, want := Hash(tc.p, tc.sctpPorts), maglev.JHash(tc.key, maglev.FlowSeed); got != want {
			t.Errorf("%s: Hash = %#08x, JHash of the register layout = %#08x", tc.name, got, want)
		}
	}
	mapped := *v4
	mapped.Src, mapped.Dst = netip.AddrFrom16(v4.Src.As16()), netip.AddrFrom16(v4.Dst.As16())
	if Hash(&mapped, false) != Hash(v4, false) {
		t.Errorf("an IPv4 packet's hash depends on how its addresses are stored")
	}
}

func TestHashAllocatesNothing(t *testing.T) {
	p := &packet.Packet{Family: 6, Proto: model.ProtoTCP, Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("2001:db8::1")}
	if allocs := testing.AllocsPerRun(100, func() { Hash(p, true) }); allocs != 0 {
		t.Errorf("Hash: %v allocs, want 0", allocs)
	}
}
