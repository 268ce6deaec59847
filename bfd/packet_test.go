package bfd

import (
	"encoding/hex"
	"errors"
	"testing"
)

// Packets sent by BIRD 2.0.12, captured with tcpdump in the integration
// test's network namespaces: Down (Your Discriminator 0), Up with Poll, Up
// with Final, Up.
var realPackets = []string{
	"2040031822a11a8000000000000f4240000493e000000000",
	"20e0031822a11a80531d93c2000493e0000493e000000000",
	"20d0031822a11a80531d93c2000493e0000493e000000000",
	"20c0031822a11a80531d93c2000493e0000493e000000000",
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func validPacket() Packet {
	return Packet{
		Version: 1, Diag: DiagNeighborSignaledDown, State: StateUp, Poll: true,
		DetectMult: 3, Length: 24, MyDiscriminator: 0x01020304, YourDiscriminator: 0x05060708,
		DesiredMinTxUsec: 300000, RequiredMinRxUsec: 250000, RequiredMinEchoRxUsec: 0,
	}
}

func marshal(t testing.TB, p Packet) []byte {
	t.Helper()
	b := make([]byte, PacketLen)
	if _, err := p.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUnmarshalDecodesFields(t *testing.T) {
	b := mustHex(t, realPackets[1])
	var p Packet
	if err := p.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	want := Packet{Version: 1, State: StateUp, Poll: true, DetectMult: 3, Length: 24,
		MyDiscriminator: 0x22a11a80, YourDiscriminator: 0x531d93c2,
		DesiredMinTxUsec: 300000, RequiredMinRxUsec: 300000}
	if p != want {
		t.Fatalf("got %+v, want %+v", p, want)
	}
}

func TestUnmarshalDiscards(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		want   DiscardReason
	}{
		{"valid", func(b []byte) []byte { return b }, discardNone},
		{"short datagram", func(b []byte) []byte { return b[:23] }, DiscardBadLength},
		{"version 0", func(b []byte) []byte { b[0] = 0<<5 | b[0]&0x1f; return b }, DiscardBadVersion},
		{"version 2", func(b []byte) []byte { b[0] = 2<<5 | b[0]&0x1f; return b }, DiscardBadVersion},
		{"length 23", func(b []byte) []byte { b[3] = 23; return b }, DiscardBadLength},
		{"length beyond payload", func(b []byte) []byte { b[3] = 28; return b }, DiscardTruncated},
		{"length 28 with payload 28", func(b []byte) []byte { b[3] = 28; return append(b, 0, 0, 0, 0) }, discardNone},
		{"auth bit with length 24", func(b []byte) []byte { b[1] |= flagAuth; return b }, DiscardBadLength},
		{"auth bit with length 26", func(b []byte) []byte { b[1] |= flagAuth; b[3] = 26; return append(b, 1, 2) }, DiscardAuthNotSupported},
		{"detect mult 0", func(b []byte) []byte { b[2] = 0; return b }, DiscardZeroDetectMult},
		{"multipoint", func(b []byte) []byte { b[1] |= flagMultipoint; return b }, DiscardMultipoint},
		{"my discriminator 0", func(b []byte) []byte { clear(b[4:8]); return b }, DiscardZeroMyDiscriminator},
		{"your discriminator 0 in Up", func(b []byte) []byte { clear(b[8:12]); return b }, DiscardZeroYourDiscriminator},
		{"your discriminator 0 in Init", func(b []byte) []byte { clear(b[8:12]); b[1] = byte(StateInit) << 6; return b }, DiscardZeroYourDiscriminator},
		{"your discriminator 0 in Down", func(b []byte) []byte { clear(b[8:12]); b[1] = byte(StateDown) << 6; return b }, discardNone},
		{"your discriminator 0 in AdminDown", func(b []byte) []byte { clear(b[8:12]); b[1] = 0; return b }, discardNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.mutate(marshal(t, validPacket()))
			var p Packet
			err := p.Unmarshal(b)
			if tt.want == discardNone {
				if err != nil {
					t.Fatalf("unexpected discard: %v", err)
				}
				return
			}
			var r DiscardReason
			if !errors.As(err, &r) || r != tt.want {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestRealPacketsAccepted(t *testing.T) {
	for _, h := range realPackets {
		var p Packet
		if err := p.Unmarshal(mustHex(t, h)); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	for _, p := range []Packet{validPacket(), {Version: 1, State: StateDown, DetectMult: 1, Length: 24, MyDiscriminator: 1, Final: true, ControlPlaneIndependent: true, Demand: true}} {
		var got Packet
		if err := got.Unmarshal(marshal(t, p)); err != nil {
			t.Fatal(err)
		}
		if got != p {
			t.Fatalf("round trip: got %+v, want %+v", got, p)
		}
	}
	if _, err := (&Packet{}).MarshalTo(make([]byte, 23)); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("short buffer: got %v", err)
	}
}

func TestCodecDoesNotAllocate(t *testing.T) {
	good := marshal(t, validPacket())
	bad := append([]byte(nil), good...)
	bad[2] = 0
	buf := make([]byte, PacketLen)
	var p Packet
	allocs := testing.AllocsPerRun(1000, func() {
		_ = p.Unmarshal(good)
		_ = p.Unmarshal(bad) // the DiscardReason error must not allocate either
		_, _ = p.MarshalTo(buf)
	})
	if allocs != 0 {
		t.Fatalf("codec allocates %v times per run", allocs)
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, s := range realPackets {
		f.Add(mustHex(f, s))
	}
	f.Add(marshal(f, validPacket()))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Packet
		if err := p.Unmarshal(b); err != nil {
			if _, ok := err.(DiscardReason); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		out := marshal(t, p)
		// Everything but the Length byte (we never write trailing data)
		// must come back unchanged.
		if string(out[:3]) != string(b[:3]) || string(out[4:]) != string(b[4:PacketLen]) {
			t.Fatalf("round trip changed packet:\n in %x\nout %x", b[:PacketLen], out)
		}
		var q Packet
		if err := q.Unmarshal(out); err != nil {
			t.Fatalf("re-unmarshal: %v", err)
		}
		p.Length = PacketLen
		if p != q {
			t.Fatalf("struct round trip: %+v != %+v", p, q)
		}
	})
}

func BenchmarkUnmarshal(b *testing.B) {
	buf := marshal(b, validPacket())
	var p Packet
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Unmarshal(buf)
	}
}
