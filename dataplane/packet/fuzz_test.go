package packet

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

func FuzzDecode(f *testing.F) {
	for _, tc := range decodeCases() {
		f.Add(tc.pkt)
	}
	for _, b := range testpkt.PcapSample(f, "../../bench/testdata/*.pcap", 20) {
		f.Add(b)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		b, _ := randomPacket(rng)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Packet
		p.Decode(b)
		dirty := Packet{Kind: KindOther, Family: 7, SrcPort: 9, L4: []byte{1}, Err: ErrBadFragment, FragID: 1, ICMPType: 1}
		dirty.Decode(b)
		if diff := fullDiff(dirty, p); diff != "" {
			t.Fatalf("decode depends on the Packet's previous contents:\n%s", diff)
		}
		if msg := violatedInvariant(b, &p); msg != "" {
			t.Fatalf("Decode(%x) = %+v: %s", b, p, msg)
		}
		var gso Packet
		gso.DecodeGSO(b)
		if msg := violatedInvariant(b, &gso); msg != "" {
			t.Fatalf("DecodeGSO(%x) = %+v: %s", b, gso, msg)
		}
		if statesLength(b) && fullDiff(gso, p) != "" {
			t.Fatalf("DecodeGSO(%x) differs from Decode for a packet that states its length:\n%s", b, fullDiff(gso, p))
		}
	})
}

// TestInvariantsHoldForCases runs the fuzz invariants over the table, so
// that they are checked by plain `go test` too.
func TestInvariantsHoldForCases(t *testing.T) {
	for _, tc := range decodeCases() {
		var p Packet
		p.Decode(tc.pkt)
		if msg := violatedInvariant(tc.pkt, &p); msg != "" {
			t.Errorf("%s: %s", tc.name, msg)
		}
	}
}

// violatedInvariant returns a description of the first invariant of p
// (decoded from b) that does not hold, or "".
func violatedInvariant(b []byte, p *Packet) string {
	if (p.Kind == KindInvalid) != (p.Err != nil) {
		return "Err set if and only if KindInvalid"
	}
	if p.Kind == KindInvalid {
		if !slices.Contains(Errors(), p.Err) {
			return "Err is not one of the sentinels"
		}
		return ""
	}
	if p.Kind > KindOther {
		return "unknown Kind"
	}
	if !within(p.L4, b) {
		return "L4 is not inside the input"
	}
	if p.Family != b[0]>>4 || !p.Src.IsValid() || !p.Dst.IsValid() ||
		p.Src.Is4() != (p.Family == 4) || p.Dst.Is4() != (p.Family == 4) {
		return "family and addresses disagree with the IP version"
	}
	if p.Kind != KindFirstFragment && p.Kind != KindLaterFragment && p.FragID != 0 {
		return "FragID set on an unfragmented packet"
	}
	return kindInvariant(p)
}

func kindInvariant(p *Packet) string {
	portsFromL4 := func(reversed bool) bool {
		if len(p.L4) < portsLen {
			return false
		}
		s, d := binary.BigEndian.Uint16(p.L4[0:]), binary.BigEndian.Uint16(p.L4[2:])
		if reversed {
			s, d = d, s
		}
		return p.SrcPort == s && p.DstPort == d
	}
	switch p.Kind {
	case KindTransport:
		if !hasPorts(p.Proto) || !portsFromL4(false) {
			return "transport without its ports from L4"
		}
	case KindFirstFragment:
		if p.L4 == nil || (hasPorts(p.Proto) && !portsFromL4(false)) {
			return "first fragment without L4 or its ports"
		}
	case KindLaterFragment:
		if p.L4 != nil || p.SrcPort != 0 || p.DstPort != 0 {
			return "later fragment with L4 or ports"
		}
	case KindICMPEcho:
		if !isICMP(p.Family, p.Proto) || icmpClassOf(p.Family, p.ICMPType) != icmpEcho ||
			p.SrcPort != p.DstPort || len(p.L4) < icmpHeaderLen || binary.BigEndian.Uint16(p.L4[4:]) != p.SrcPort {
			return "echo without the identifier as both ports"
		}
	case KindICMPError:
		if icmpClassOf(p.Family, p.ICMPType) != icmpError {
			return "ICMP error of a non-error type"
		}
		if hasPorts(p.Proto) && (len(p.L4) < embeddedMinL4Len || !portsFromL4(true)) {
			return "ICMP error without the embedded ports reversed"
		}
		if isICMP(p.Family, p.Proto) && (len(p.L4) < embeddedMinL4Len || icmpClassOf(p.Family, p.L4[0]) == icmpError) {
			return "ICMP error embedding a short ICMP message or an ICMP error"
		}
	case KindOther:
		if p.SrcPort != 0 || p.DstPort != 0 {
			return "other with ports"
		}
	}
	return ""
}

// within reports whether sub is nil or lies inside b's memory.
func within(sub, b []byte) bool {
	if sub == nil {
		return true
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	s := uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	return s >= start && s+uintptr(len(sub)) <= start+uintptr(len(b))
}

// TestDecodeEveryPrefix decodes every prefix of every case (as a packet
// cut by nfqueue's copy range would be) twice: as a slice of the longer
// packet, whose capacity reaches past its length, and as a clipped copy.
// The results must agree (Decode reads nothing past len) and hold the
// invariants.
func TestDecodeEveryPrefix(t *testing.T) {
	for _, tc := range decodeCases() {
		for n := range len(tc.pkt) {
			var inPlace, copied Packet
			inPlace.Decode(tc.pkt[:n])
			copied.Decode(slices.Clip(slices.Clone(tc.pkt[:n])))
			inPlace.L4, copied.L4 = slices.Clone(inPlace.L4), slices.Clone(copied.L4)
			if diff := fullDiff(inPlace, copied); diff != "" {
				t.Fatalf("%s cut to %d bytes: in place and copied decode differ:\n%s", tc.name, n, diff)
			}
			inPlace.Decode(tc.pkt[:n])
			if msg := violatedInvariant(tc.pkt[:n], &inPlace); msg != "" {
				t.Fatalf("%s cut to %d bytes: %s", tc.name, n, msg)
			}
		}
	}
}
