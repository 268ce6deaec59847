package bpfpath

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/dataplane/flowkey"
	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/maglev"
	"github.com/sllbrd/sllbrd/model"
)

// The VIPs of the one-Service configuration (oneService) the frame tests
// aim at.
var (
	testVIP4 = netip.MustParseAddr("20.0.0.1")
	testVIP6 = netip.MustParseAddr("2000::1")
)

// testMark is the fwmark oneService gives a slot.
func testMark(slot int) uint32 { return 0x10000 + uint32(slot) }

// service is what the frame tests configure: one Service with table
// (used for both families) and its SCTP rule.
type service struct {
	table         *maglev.Table
	sctpPortsOnly bool
}

// oneService is the input of svc: one route, to testVIP4 and testVIP6, of
// every protocol from every source, to a Service whose every slot has an
// endpoint of each family with mark testMark(slot).
func oneService(svc service) fastpath.Input {
	s := fastpath.Service{Name: "svc", SCTPPortsOnly: svc.sctpPortsOnly}
	if svc.table.ActiveSlots() > 0 {
		s.IPv4 = svc.table.AppendEntrySlots(nil)
		s.IPv6 = s.IPv4
	}
	for slot := range svc.table.Slots() {
		s.Endpoints = append(s.Endpoints, fastpath.Endpoint{ID: slot, Mark: testMark(slot),
			IPv4: netip.AddrFrom4([4]byte{10, 1, byte(slot >> 8), byte(slot)}), IPv6: netip.AddrFrom16([16]byte{0xfd, 15: byte(slot)})})
	}
	return fastpath.Input{Services: []fastpath.Service{s}, Routes: []model.Route{{
		Name: "ns/all", Service: "svc", Priority: 1,
		Destinations: []netip.Prefix{netip.PrefixFrom(testVIP4, 32), netip.PrefixFrom(testVIP6, 128)},
		Protocols:    []model.Protocol{model.ProtoTCP, model.ProtoUDP, model.ProtoSCTP},
	}}}
}

// expect returns the Result the program must report for frame under
// oneService(svc), derived from the userspace decoder (package
// dataplane/packet), flowkey and the table: the program decides exactly
// the packets the decoder calls KindTransport or KindICMPEcho, less the
// punts doc.go lists (Ethernet type unlike the IP version, IP length
// beyond the frame, IPv6 extension headers), to a VIP. exact is false
// when it must punt before looking at the destination; the caller checks
// the status then.
func expect(frame []byte, svc service) (want Result, exact bool) {
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
	case p.Dst != testVIP4 && p.Dst != testVIP6:
		return Result{Status: StatusPuntNotVIP, Route: NoRoute}, true
	}
	h := flowkey.Hash(&p, svc.sctpPortsOnly)
	want = Result{Status: StatusDecided, Route: 0, Hash: h, KeyLen: uint32(flowkey.Len(p.Family, p.Proto, svc.sctpPortsOnly))}
	slot, ok := svc.table.Lookup32(h)
	if !ok {
		want.Status = StatusPuntNoEndpoint
		return want, true
	}
	want.Entry = maglev.ReciprocalScale(h, uint32(svc.table.Size()))
	want.Slot, want.Mark = uint32(slot), testMark(slot)
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
// "". wantStatus is g.want of a generated frame (0 for any).
func disagreement(frame []byte, svc service, got Result, wantStatus Status) string {
	want, exact := expect(frame, svc)
	switch {
	case exact && got != want:
		return fmt.Sprintf("got %+v (%v), the decoder and flowkey say %+v (%v)", got, got.Status, want, want.Status)
	case !exact && (got.Status == StatusDecided || got.Status == StatusPuntNoEndpoint || got.Status == StatusPuntNotVIP):
		return fmt.Sprintf("got %+v (%v), the decoder says punt before the destination", got, got.Status)
	case !exact && got != (Result{Status: got.Status, Route: NoRoute}):
		return fmt.Sprintf("got %+v (%v): a punt carries no route, hash, entry, slot, mark or key length", got, got.Status)
	case wantStatus != 0 && wantStatus != StatusDecided && got.Status != wantStatus:
		return fmt.Sprintf("got %v, want %v", got.Status, wantStatus)
	case wantStatus == StatusDecided && !exact:
		return fmt.Sprintf("generated as decidable, but the decoder says punt (%v): a broken generator", got.Status)
	}
	return ""
}
