package dataplane

import (
	"encoding/binary"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/fragment"
	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/maglev"
	"github.com/sllbrd/sllbrd/model"
)

// Decision is the outcome of Decide. The caller owns it and reuses it for
// every packet of one reader; it carries the decoder's scratch space.
type Decision struct {
	Verdict Verdict
	Mark    uint32 // set when Verdict is Accept
	Reason  Reason
	// Tokens lists held fragments this packet settles: Release gets this
	// decision's verdict and mark, Drop gets dropped.
	Tokens fragment.Tokens

	pkt packet.Packet
}

// NewDecision returns a Decision ready for Decide.
func NewDecision() *Decision {
	return &Decision{Tokens: *fragment.NewTokens()}
}

// Packet returns the decoded view of the last packet decided.
func (d *Decision) Packet() *packet.Packet { return &d.pkt }

// Decide decides packet b (an IP packet as nfqueue delivers it, possibly cut
// to the copy range; wireLen is its full length, counted in the byte
// counters). token identifies the packet to the caller should it be held.
func (e *Engine) Decide(b []byte, wireLen int, token uint64, d *Decision) {
	d.Verdict, d.Mark = Drop, 0
	d.Tokens.Reset()
	s := e.snap.Load()
	if s == nil {
		e.finish(d, ReasonNotConfigured, wireLen)
		return
	}
	p := &d.pkt
	p.Decode(b)
	switch p.Kind {
	case packet.KindInvalid:
		e.countDecodeError(p.Err)
		e.finish(d, ReasonUndecodable, wireLen)
	case packet.KindOther:
		e.finish(d, ReasonUnsupported, wireLen)
	case packet.KindLaterFragment:
		e.laterFragment(p, wireLen, token, d)
	default:
		e.balance(s, p, wireLen, d)
	}
}

func (e *Engine) balance(s *snapshot, p *packet.Packet, wireLen int, d *Decision) {
	idx, ok := s.routes.Lookup(p)
	if !ok {
		e.finish(d, ReasonNoRoute, wireLen)
		return
	}
	rt := &s.perRoute[idx]
	rt.counter.Add(wireLen)
	svc := rt.service
	if svc == nil {
		e.finish(d, ReasonNoEndpoint, wireLen)
		return
	}
	fam := svc.family(p.Family == 4)
	slot, ok := fam.table.Lookup(flowHash(p, svc.sctpPortsOnly))
	if !ok {
		e.finish(d, ReasonNoEndpoint, wireLen)
		return
	}
	fam.counters[slot].Add(wireLen)
	d.Verdict, d.Mark = Accept, svc.marks[slot]
	if p.Kind == packet.KindFirstFragment {
		v := fragmentValue(d.Mark, rt.counterID, fam.counterIDs[slot])
		e.fragments.Remember(fragmentKey(p), v, time.Now(), &d.Tokens)
	}
	e.finish(d, ReasonBalanced, wireLen)
}

func (e *Engine) laterFragment(p *packet.Packet, wireLen int, token uint64, d *Decision) {
	v, found, held := e.fragments.Lookup(fragmentKey(p), time.Now(), true, token, &d.Tokens)
	switch {
	case found:
		mark, routeID, endpointID := splitFragmentValue(v)
		e.routeCounters.byID(routeID).Add(wireLen)
		e.endpointCounters.byID(endpointID).Add(wireLen)
		d.Verdict, d.Mark = Accept, mark
		e.finish(d, ReasonFragmentFollowed, wireLen)
	case held:
		d.Verdict = Hold
		e.finish(d, ReasonFragmentHeld, wireLen)
	default:
		e.finish(d, ReasonFragmentUnknown, wireLen)
	}
}

func (e *Engine) finish(d *Decision, r Reason, wireLen int) {
	d.Reason = r
	e.reasons[r].Add(wireLen)
}

func (e *Engine) countDecodeError(err error) {
	for i := range e.decodeErrors {
		if e.decodeErrors[i].err == err {
			e.decodeErrors[i].counter.Add(0)
			return
		}
	}
}

// flowHash hashes the flow of p (see the package documentation).
func flowHash(p *packet.Packet, sctpPortsOnly bool) uint64 {
	var k [37]byte
	binary.BigEndian.PutUint16(k[0:2], p.SrcPort)
	binary.BigEndian.PutUint16(k[2:4], p.DstPort)
	k[4] = byte(p.Proto)
	if sctpPortsOnly && p.Proto == model.ProtoSCTP {
		return maglev.Hash(maglev.FlowSeed, k[:5])
	}
	src, dst := p.Src.As16(), p.Dst.As16()
	copy(k[5:21], src[:])
	copy(k[21:37], dst[:])
	return maglev.Hash(maglev.FlowSeed, k[:])
}

func fragmentKey(p *packet.Packet) fragment.Key {
	return fragment.Key{Src: p.Src, Dst: p.Dst, Proto: uint8(p.Proto), ID: p.FragID}
}

func fragmentValue(mark uint32, routeID, endpointID uint16) uint64 {
	return uint64(mark) | uint64(routeID)<<32 | uint64(endpointID)<<48
}

func splitFragmentValue(v uint64) (mark uint32, routeID, endpointID uint16) {
	return uint32(v), uint16(v >> 32), uint16(v >> 48)
}
