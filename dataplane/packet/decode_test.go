package packet

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
)

func TestDecode(t *testing.T) {
	for _, tc := range decodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			var got Packet
			got.Decode(tc.pkt)
			if diff := packetDiff(got, tc.want); diff != "" {
				t.Errorf("Decode(%x):\n%s", tc.pkt, diff)
			}
		})
	}
}

// TestDecodeOverwritesEveryField decodes each case into a Packet left
// dirty by another case: the result must not depend on what was there.
func TestDecodeOverwritesEveryField(t *testing.T) {
	cases := decodeCases()
	dirty := Packet{
		Kind: KindOther, Family: 9, Proto: 99,
		Src: netip.MustParseAddr("1.2.3.4"), Dst: netip.MustParseAddr("::5"),
		SrcPort: 1, DstPort: 2, L4: []byte{1}, FragID: 3, ICMPType: 4, ICMPCode: 5, Err: ErrBadFragment,
	}
	for _, tc := range cases {
		var fresh Packet
		fresh.Decode(tc.pkt)
		reused := dirty
		reused.Decode(tc.pkt)
		if diff := fullDiff(reused, fresh); diff != "" {
			t.Errorf("%s: decode into a dirty Packet differs from a fresh one:\n%s", tc.name, diff)
		}
	}
}

func TestDecodeDoesNotModifyInput(t *testing.T) {
	for _, tc := range decodeCases() {
		orig := bytes.Clone(tc.pkt)
		var p Packet
		p.Decode(tc.pkt)
		if !bytes.Equal(orig, tc.pkt) {
			t.Errorf("%s: Decode modified its input", tc.name)
		}
	}
}

func TestDecodeAllocatesNothing(t *testing.T) {
	var p Packet
	for _, tc := range decodeCases() {
		if allocs := testing.AllocsPerRun(100, func() { p.Decode(tc.pkt) }); allocs != 0 {
			t.Errorf("%s: %v allocations per Decode, want 0", tc.name, allocs)
		}
	}
}

// TestCasesCoverEveryKindAndError guards the table itself: every Kind and
// every sentinel error has at least one case in each IP family.
func TestCasesCoverEveryKindAndError(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range decodeCases() {
		fam := tc.name[:2]
		seen[fam+tc.want.Kind.String()] = true
		if tc.want.Err != nil {
			seen[fam+tc.want.Err.Error()] = true
		}
	}
	for _, fam := range []string{"v4", "v6"} {
		for k := KindInvalid; k <= KindOther; k++ {
			if !seen[fam+k.String()] {
				t.Errorf("no %s case of kind %v", fam, k)
			}
		}
	}
	for _, err := range Errors() {
		if !seen["v4"+err.Error()] && !seen["v6"+err.Error()] {
			t.Errorf("no case for %v", err)
		}
	}
}

func TestKindString(t *testing.T) {
	names := map[string]bool{}
	for k := KindInvalid; k <= KindOther; k++ {
		s := k.String()
		if s == "unknown" || names[s] {
			t.Errorf("Kind(%d).String() = %q: not a distinct name", k, s)
		}
		names[s] = true
	}
	if got := Kind(200).String(); got != "unknown" {
		t.Errorf("Kind(200).String() = %q, want unknown", got)
	}
}

// packetDiff describes how got differs from want ("" when equal). For a
// wanted KindInvalid only Kind and Err count; L4 is compared by content and
// by nil-ness.
func packetDiff(got, want Packet) string {
	if want.Kind == KindInvalid {
		if got.Kind != KindInvalid || got.Err != want.Err {
			return fmt.Sprintf("got  kind %v err %v\nwant kind %v err %v", got.Kind, got.Err, want.Kind, want.Err)
		}
		return ""
	}
	return fullDiff(got, want)
}

// fullDiff compares every field; L4 by content and nil-ness.
func fullDiff(got, want Packet) string {
	l4Differs := !bytes.Equal(got.L4, want.L4) || (got.L4 == nil) != (want.L4 == nil)
	gotL4, wantL4 := got.L4, want.L4
	if got.Kind == want.Kind && got.Family == want.Family && got.Proto == want.Proto &&
		got.Src == want.Src && got.Dst == want.Dst && got.SrcPort == want.SrcPort &&
		got.DstPort == want.DstPort && got.FragID == want.FragID && got.ICMPType == want.ICMPType &&
		got.ICMPCode == want.ICMPCode && got.Err == want.Err && !l4Differs {
		return ""
	}
	got.L4, want.L4 = nil, nil
	return fmt.Sprintf("got  %+v L4 %x (nil %v)\nwant %+v L4 %x (nil %v)",
		got, gotL4, gotL4 == nil, want, wantL4, wantL4 == nil)
}

// TestDecodeGSOLengths: a GSO aggregate over 64 KiB states no length (IPv4
// total length 0, IPv6 payload length 0, as Linux BIG TCP builds them); the
// kernel then takes the packet's length, for IPv4 only for TCP (iph_totlen).
// Decode without the GSO flag keeps the kernel's reading of a plain packet.
func TestDecodeGSOLengths(t *testing.T) {
	big := concat(tcp(40000, 80), make([]byte, 200))
	for _, tc := range []struct {
		name      string
		pkt       []byte
		gso, want Packet
	}{
		{"v4/tcp-total-length-zero", ipv4(v4{src: client4, dst: vip4, proto: 6, totalLen: -2}, big),
			flow4(KindTransport, 6, 40000, 80, big), invalid(ErrBadTotalLength)},
		{"v4/udp-total-length-zero", ipv4(v4{src: client4, dst: vip4, proto: 17, totalLen: -2}, udp(1, 2)),
			invalid(ErrBadTotalLength), invalid(ErrBadTotalLength)},
		{"v6/tcp-payload-length-zero", ipv6(v6{src: client6, dst: vip6, proto: 6, payloadLen: -2}, big),
			flow6(KindTransport, 6, 40000, 80, big), invalid(ErrTruncated)},
		{"v6/tcp-jumbo", ipv6(v6{src: client6, dst: vip6, proto: 6, payloadLen: -2, exts: []ext{jumboExt(100000, false)}}, big),
			flow6(KindTransport, 6, 40000, 80, big), flow6(KindTransport, 6, 40000, 80, big)},
	} {
		var p Packet
		p.DecodeGSO(tc.pkt)
		if diff := packetDiff(p, tc.gso); diff != "" {
			t.Errorf("%s: DecodeGSO:\n%s", tc.name, diff)
		}
		p.Decode(tc.pkt)
		if diff := packetDiff(p, tc.want); diff != "" {
			t.Errorf("%s: Decode:\n%s", tc.name, diff)
		}
	}
	// Packets that state their length decode the same with the flag.
	for _, tc := range decodeCases() {
		var plain, gso Packet
		plain.Decode(tc.pkt)
		gso.DecodeGSO(tc.pkt)
		if statesLength(tc.pkt) {
			if diff := fullDiff(gso, plain); diff != "" {
				t.Errorf("%s: DecodeGSO differs from Decode:\n%s", tc.name, diff)
			}
		}
	}
}

// statesLength reports whether b's IPv4 total length or IPv6 payload
// length is non-zero.
func statesLength(b []byte) bool {
	switch {
	case len(b) >= 4 && b[0]>>4 == 4:
		return b[2] != 0 || b[3] != 0
	case len(b) >= 6 && b[0]>>4 == 6:
		return b[4] != 0 || b[5] != 0
	}
	return true
}
