package testpkt

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// TestSCTPInit: gopacket decodes an INIT with our fields, and the checksum
// is CRC32c over the SCTP packet with the checksum field zero, stored
// little-endian (RFC 9260 appendix A), computed here independently.
func TestSCTPInit(t *testing.T) {
	for _, f := range []Flow{{c4, v4, 132, 20001, 9}, {c6, v6, 132, 20001, 9}} {
		b := SCTPInit(f, 0xdeadbeef, Options{})
		p := decode(t, b)
		s, ok := p.Layer(layers.LayerTypeSCTP).(*layers.SCTP)
		if !ok || s.SrcPort != 20001 || s.DstPort != 9 || s.VerificationTag != 0 {
			t.Fatalf("%v: common header %+v", f.Src, s)
		}
		in, ok := p.Layer(layers.LayerTypeSCTPInit).(*layers.SCTPInit)
		if !ok || in.InitiateTag != 0xdeadbeef || in.InitialTSN != 0xdeadbeef || in.Length != 20 ||
			in.OutboundStreams != 1 || in.InboundStreams != 1 || in.AdvertisedReceiverWindowCredit == 0 {
			t.Fatalf("%v: INIT %+v", f.Src, in)
		}
		sctp := append([]byte(nil), p.NetworkLayer().LayerPayload()...)
		if len(sctp) != 32 {
			t.Fatalf("%v: SCTP packet of %d bytes, want 12 + 20", f.Src, len(sctp))
		}
		got := binary.LittleEndian.Uint32(sctp[8:12])
		clear(sctp[8:12])
		if want := crc32.Checksum(sctp, crc32.MakeTable(crc32.Castagnoli)); got != want || got == 0 {
			t.Errorf("%v: checksum %#x, want %#x", f.Src, got, want)
		}
	}
}

func TestSCTPInitRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		f   Flow
		tag uint32
	}{{Flow{c4, v4, 17, 1, 2}, 1}, {Flow{c4, v4, 132, 1, 2}, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SCTPInit(%+v, %d) did not panic", tc.f, tc.tag)
				}
			}()
			SCTPInit(tc.f, tc.tag, Options{})
		}()
	}
}
