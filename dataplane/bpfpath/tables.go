package bpfpath

import (
	"fmt"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/maglev"
)

// tableSCTPPortsOnly is bpf/tables.h's TABLE_SCTP_PORTS_ONLY.
const tableSCTPPortsOnly = 1

// tableKey is a Service's table of family fam in maglev_tables: 2 * its
// index + (fam 6).
func tableKey(index uint32, fam uint8) uint32 {
	if fam == 6 {
		return 2*index + 1
	}
	return 2 * index
}

// tableOf is the table of s's family fam as the program reads it: the
// header (M, flags), then entry -> the mark and slot of the endpoint that
// owns it (fastpath.Service's entries; the marks of its endpoints with an
// address of the family, as the kernel path's entry map holds them). A
// family without entries is a header with M = 0: no ready endpoint. An
// entry whose slot has no such endpoint is an error: the input is not one
// the kernel path could compile either.
func tableOf(s *fastpath.Service, fam uint8) ([]ingressTableEntry, error) {
	entries := s.IPv4
	if fam == 6 {
		entries = s.IPv6
	}
	if len(entries) > maglev.MaxSize {
		return nil, fmt.Errorf("service %s, IPv%d: table of %d entries: more than maglev.MaxSize (%d)", s.Name, fam, len(entries), maglev.MaxSize)
	}
	marks := map[uint16]uint32{}
	for _, ep := range s.Endpoints {
		addr := ep.IPv4
		if fam == 6 {
			addr = ep.IPv6
		}
		if addr.IsValid() && ep.ID >= 0 && ep.ID <= maglev.MaxSlots {
			marks[uint16(ep.ID)] = ep.Mark
		}
	}
	out := make([]ingressTableEntry, 1, 1+len(entries))
	out[0].Mark = uint32(len(entries))
	if s.SCTPPortsOnly {
		out[0].Slot = tableSCTPPortsOnly
	}
	for i, slot := range entries {
		mark, ok := marks[slot]
		if !ok {
			return nil, fmt.Errorf("service %s, IPv%d: entry %d belongs to slot %d, which has no endpoint of the family with a mark", s.Name, fam, i, slot)
		}
		out = append(out, ingressTableEntry{Mark: mark, Slot: uint32(slot)})
	}
	return out, nil
}
