package bpfpath

import (
	"encoding/binary"
	"fmt"

	"github.com/sllbrd/sllbrd/dataplane/flowkey"
	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/maglev"
)

// service is what Configure gave the program: the table and the SCTP rule.
type service struct {
	table         *maglev.Table
	sctpPortsOnly bool
}

// expect returns the Result the program must report for frame, derived
// from the userspace decoder (package dataplane/packet) and flowkey: the
// program decides exactly the packets the decoder calls KindTransport or
// KindICMPEcho, less the punts doc.go lists (Ethernet type unlike the IP
// version, IP length beyond the frame, IPv6 extension headers). decided
// is false when it must punt; the Result then holds the hash only for a
// Service without a table.
func expect(frame []byte, svc service) (want Result, decided bool) {
	var p packet.Packet
	ip := frame[14:]
	p.Decode(ip)
	if p.Kind != packet.KindTransport && p.Kind != packet.KindICMPEcho {
		return Result{}, false
	}
	etype := binary.BigEndian.Uint16(frame[12:14])
	switch {
	case p.Family == 4 && etype != etherIPv4, p.Family == 6 && etype != etherIPv6:
		return Result{}, false
	case p.Family == 4 && int(binary.BigEndian.Uint16(ip[2:4])) > len(ip):
		return Result{}, false
	case p.Family == 6 && 40+int(binary.BigEndian.Uint16(ip[4:6])) > len(ip):
		return Result{}, false
	case p.Family == 6 && isIPv6Extension(ip[6]):
		return Result{}, false
	}
	h := flowkey.Hash(&p, svc.sctpPortsOnly)
	want = Result{Status: StatusDecided, Hash: h, KeyLen: uint32(flowkey.Len(p.Family, p.Proto, svc.sctpPortsOnly))}
	slot, ok := svc.table.Lookup32(h)
	if !ok {
		want.Status = StatusPuntNoTable
		return want, true
	}
	want.Entry = maglev.ReciprocalScale(h, uint32(svc.table.Size()))
	want.Slot = uint32(slot)
	return want, true
}

// isIPv6Extension reports whether next is an extension header the decoder
// walks.
func isIPv6Extension(next uint8) bool {
	switch next {
	case 0, 43, 44, 51, 60:
		return true
	}
	return false
}

// disagreement returns why got is not the program's answer for frame, or
// "". want is g.want of a generated frame (0 for any punt).
func disagreement(frame []byte, svc service, got Result, wantStatus Status) string {
	want, hashed := expect(frame, svc)
	switch {
	case hashed && got != want:
		return fmt.Sprintf("got %+v (%v), the decoder and flowkey say %+v (%v)", got, got.Status, want, want.Status)
	case !hashed && (got.Status == StatusDecided || got.Status == StatusPuntNoTable):
		return fmt.Sprintf("got %+v (%v), the decoder says punt", got, got.Status)
	case !hashed && got != (Result{Status: got.Status}):
		return fmt.Sprintf("got %+v (%v): a punt carries no hash, entry, slot or key length", got, got.Status)
	case wantStatus != 0 && wantStatus != StatusDecided && got.Status != wantStatus:
		return fmt.Sprintf("got %v, want %v", got.Status, wantStatus)
	case wantStatus == StatusDecided && !hashed:
		return fmt.Sprintf("generated as decidable, but the decoder says punt (%v): a broken generator", got.Status)
	}
	return ""
}
