package liveness

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var data8 = []byte{1, 2, 3, 4, 5, 6, 7, 8}

// TestAppendEchoRequestMatchesGopacket checks the encoder against an
// independent one.
func TestAppendEchoRequestMatchesGopacket(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		got := AppendEchoRequest(nil, v6, 0xbeef, 0x1234, data8)
		buf := gopacket.NewSerializeBuffer()
		var l gopacket.SerializableLayer = &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 0xbeef, Seq: 0x1234}
		payload := data8
		if v6 {
			// gopacket's ICMPv6 layer ends after type, code and checksum:
			// identifier and sequence are payload. The checksum stays zero,
			// as the kernel fills it.
			l = &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}
			payload = append([]byte{0xbe, 0xef, 0x12, 0x34}, data8...)
		}
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: !v6}, l, gopacket.Payload(payload)); err != nil {
			t.Fatal(err)
		}
		if want := buf.Bytes(); !bytes.Equal(got, want) {
			t.Errorf("v6=%v: got % x, gopacket % x", v6, got, want)
		}
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	msg := AppendEchoRequest(nil, false, 7, 9, data8)
	toReply(msg, false)
	var e Echo
	if err := e.DecodeIPv4(ipv4Packet(a4, us, msg)); err != nil {
		t.Fatal(err)
	}
	if e.V6 || !e.IsReply() || e.Code != 0 || e.ID != 7 || e.Seq != 9 || e.Src != a4 || e.Dst != us || !bytes.Equal(e.Data, data8) {
		t.Errorf("decoded %+v", e)
	}
	msg6 := AppendEchoRequest(nil, true, 7, 9, data8)
	toReply(msg6, true)
	if err := e.DecodeICMPv6(msg6); err != nil {
		t.Fatal(err)
	}
	if !e.V6 || !e.IsReply() || e.ID != 7 || e.Seq != 9 || e.Src.IsValid() || !bytes.Equal(e.Data, data8) {
		t.Errorf("decoded %+v", e)
	}
	// A request decodes too (the prober rejects it as not a reply).
	if err := e.DecodeICMPv6(AppendEchoRequest(nil, true, 7, 9, nil)); err != nil || e.IsReply() || len(e.Data) != 0 {
		t.Errorf("request: %v %+v", err, e)
	}
}

// TestDecodeIPv4Layout covers header options and bytes past the total
// length (link padding), which must not count as ICMP data.
func TestDecodeIPv4Layout(t *testing.T) {
	msg := AppendEchoRequest(nil, false, 1, 2, data8)
	toReply(msg, false)
	p := ipv4Packet(a4, us, msg)
	withOpts := append(append([]byte{0x46}, p[1:20]...), 1, 1, 1, 0) // IHL 6: NOP NOP NOP EOL
	withOpts = append(withOpts, msg...)
	binary.BigEndian.PutUint16(withOpts[2:], uint16(len(withOpts)))
	padded := append(append([]byte{}, p...), 0xff, 0xff)
	for name, b := range map[string][]byte{"options": withOpts, "padding": padded} {
		var e Echo
		if err := e.DecodeIPv4(b); err != nil || e.ID != 1 || e.Seq != 2 || !bytes.Equal(e.Data, data8) {
			t.Errorf("%s: %v %+v", name, err, e)
		}
	}
}

func TestDecodeMalformed(t *testing.T) {
	reply := AppendEchoRequest(nil, false, 1, 2, data8)
	toReply(reply, false)
	good := ipv4Packet(a4, us, reply)
	mod := func(f func(b []byte)) []byte {
		b := append([]byte{}, good...)
		f(b)
		return b
	}
	other := append([]byte{3, 1, 0, 0}, make([]byte, 28)...) // destination unreachable
	setICMPChecksum(other)
	v4 := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"short header", good[:19], ErrTruncated},
		{"version 6", mod(func(b []byte) { b[0] = 0x65 }), ErrNotIPv4},
		{"IHL 4", mod(func(b []byte) { b[0] = 0x44 }), ErrBadHeader},
		{"IHL past total", mod(func(b []byte) { b[0] = 0x4f }), ErrBadHeader},
		{"total past buffer", good[:len(good)-1], ErrBadHeader},
		{"total below header", mod(func(b []byte) { binary.BigEndian.PutUint16(b[2:], 19) }), ErrBadHeader},
		{"UDP", mod(func(b []byte) { b[9] = 17 }), ErrNotICMP},
		{"more fragments", mod(func(b []byte) { b[6] = 0x20 }), ErrFragment},
		{"fragment offset", mod(func(b []byte) { b[7] = 1 }), ErrFragment},
		{"ICMP truncated", mod(func(b []byte) { binary.BigEndian.PutUint16(b[2:], 27) })[:27], ErrTruncated},
		{"not echo", ipv4Packet(a4, us, other), ErrNotEcho},
		{"bad checksum", mod(func(b []byte) { b[len(b)-1] ^= 1 }), ErrBadChecksum},
		{"ICMPv6 type in IPv4", mod(func(b []byte) { b[20] = TypeEchoReply6 }), ErrNotEcho},
	}
	for _, c := range v4 {
		var e Echo
		if err := e.DecodeIPv4(c.b); err != c.want {
			t.Errorf("IPv4 %s: got %v, want %v", c.name, err, c.want)
		}
	}
	reply6 := AppendEchoRequest(nil, true, 1, 2, data8)
	toReply(reply6, true)
	v6 := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"7 bytes", reply6[:7], ErrTruncated},
		{"destination unreachable", append([]byte{1}, reply6[1:]...), ErrNotEcho},
		{"ICMPv4 type in IPv6", append([]byte{TypeEchoReply4}, reply6[1:]...), ErrNotEcho},
	}
	for _, c := range v6 {
		var e Echo
		if err := e.DecodeICMPv6(c.b); err != c.want {
			t.Errorf("IPv6 %s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestChecksumRFC1071(t *testing.T) {
	// RFC 1071 section 3's example: the sum of 00 01 f2 03 f4 f5 f6 f7 is
	// ddf2; the checksum its complement.
	if got := checksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0); got != ^uint16(0xddf2) {
		t.Errorf("checksum %#04x, want %#04x", got, ^uint16(0xddf2))
	}
	if got := checksum([]byte{0xff}, 0); got != 0x00ff { // odd length pads with zero
		t.Errorf("odd checksum %#04x", got)
	}
}

func TestCodecAllocatesNothing(t *testing.T) {
	reply := AppendEchoRequest(nil, false, 1, 2, data8)
	toReply(reply, false)
	pkt := ipv4Packet(a4, us, reply)
	buf := make([]byte, 0, 64)
	var e Echo
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendEchoRequest(buf[:0], false, 1, 2, data8)
		_ = e.DecodeIPv4(pkt)
		_ = e.DecodeICMPv6(buf)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per encode and decode, want 0", allocs)
	}
}
