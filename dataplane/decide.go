package dataplane

import (
	"sync/atomic"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/fragment"
	"github.com/sllbrd/sllbrd/dataplane/packet"
)

// Decision is the outcome of Decide. The caller owns it and reuses it for
// every packet of one reader; it carries the decoder's scratch space and the
// reader's counter shard, so concurrent readers need one Decision each.
type Decision struct {
	Verdict Verdict
	Mark    uint32 // set when Verdict is Accept
	Reason  Reason
	// Tokens lists held fragments this packet settles: Release gets this
	// decision's verdict and mark, Drop gets dropped.
	Tokens fragment.Tokens

	pkt   packet.Packet
	shard uint32
}

// nextShard spreads Decisions over the counter shards.
var nextShard atomic.Uint32

// NewDecision returns a Decision ready for Decide, writing the next counter
// shard in turn.
func NewDecision() *Decision {
	return &Decision{Tokens: *fragment.NewTokens(), shard: nextShard.Add(1) - 1}
}

// Packet returns the decoded view of the last packet decided.
func (d *Decision) Packet() *packet.Packet { return &d.pkt }

// Meta is what the caller knows of a packet besides its bytes.
type Meta struct {
	// Length is the packet's full length, counted in the byte counters;
	// the bytes given may be cut to nfqueue's copy range.
	Length int
	// Token identifies the packet to the caller, should it be held.
	Token uint64
	// GSO: the kernel flagged the packet as a GSO/GRO aggregate
	// (NFQA_SKB_GSO); its IP length field may be 0 (packet.DecodeGSO).
	GSO bool
	// HoldFull: the caller holds as many packets as it may, so a later
	// fragment whose first fragment is unknown is dropped
	// (ReasonFragmentHoldLimit) instead of held.
	HoldFull bool
}

// Decide decides packet b (an IP packet as nfqueue delivers it, possibly cut
// to the copy range; wireLen is its full length, counted in the byte
// counters). token identifies the packet to the caller should it be held.
func (e *Engine) Decide(b []byte, wireLen int, token uint64, d *Decision) {
	e.DecideMeta(b, Meta{Length: wireLen, Token: token}, d)
}

// DecideMeta is Decide with everything the kernel tells of the packet.
func (e *Engine) DecideMeta(b []byte, m Meta, d *Decision) {
	d.Verdict, d.Mark = Drop, 0
	d.Tokens.Reset()
	sh := &e.shards[d.shard&e.shardMask]
	s := e.snap.Load()
	if s == nil {
		e.finish(sh, d, ReasonNotConfigured, m.Length)
		return
	}
	p := &d.pkt
	if m.GSO {
		p.DecodeGSO(b)
	} else {
		p.Decode(b)
	}
	switch p.Kind {
	case packet.KindInvalid:
		e.countDecodeError(sh, p.Err)
		e.finish(sh, d, ReasonUndecodable, m.Length)
	case packet.KindOther:
		e.finish(sh, d, ReasonUnsupported, m.Length)
	case packet.KindLaterFragment:
		e.laterFragment(sh, p, m, d)
	default:
		e.balance(sh, s, p, m.Length, d)
	}
}

func (e *Engine) balance(sh *engineShard, s *snapshot, p *packet.Packet, wireLen int, d *Decision) {
	c := s.choose(p)
	if c.target == nil {
		e.finish(sh, d, c.reason, wireLen)
		return
	}
	shard := int(d.shard & e.shardMask)
	e.routeCounters.add(shard, c.target.counterID, wireLen)
	if c.reason != ReasonBalanced {
		e.finish(sh, d, c.reason, wireLen)
		return
	}
	endpointID := c.fam.counterIDs[c.slot]
	e.endpointCounters.add(shard, endpointID, wireLen)
	d.Verdict, d.Mark = Accept, c.mark
	if p.Kind == packet.KindFirstFragment {
		v := fragmentValue(d.Mark, c.target.counterID, endpointID)
		e.fragments.Remember(fragmentKey(p), v, time.Now(), &d.Tokens)
	}
	e.finish(sh, d, ReasonBalanced, wireLen)
}

func (e *Engine) laterFragment(sh *engineShard, p *packet.Packet, m Meta, d *Decision) {
	v, found, held := e.fragments.Lookup(fragmentKey(p), time.Now(), !m.HoldFull, m.Token, &d.Tokens)
	switch {
	case found:
		mark, routeID, endpointID := splitFragmentValue(v)
		shard := int(d.shard & e.shardMask)
		e.routeCounters.add(shard, routeID, m.Length)
		e.endpointCounters.add(shard, endpointID, m.Length)
		d.Verdict, d.Mark = Accept, mark
		e.finish(sh, d, ReasonFragmentFollowed, m.Length)
	case held:
		d.Verdict = Hold
		e.finish(sh, d, ReasonFragmentHeld, m.Length)
	case m.HoldFull:
		e.finish(sh, d, ReasonFragmentHoldLimit, m.Length)
	default:
		e.finish(sh, d, ReasonFragmentUnknown, m.Length)
	}
}

func (e *Engine) finish(sh *engineShard, d *Decision, r Reason, wireLen int) {
	d.Reason = r
	sh.reasons[r].add(wireLen)
}

func (e *Engine) countDecodeError(sh *engineShard, err error) {
	for i, known := range e.decodeErrors {
		if known == err {
			sh.decodeErrors[i].add(0)
			return
		}
	}
}

// fragmentKey names the datagram of a fragment. IPv4: source, destination,
// protocol and identification (RFC 791 section 3.2). IPv6: source,
// destination and identification only (RFC 8200 section 4.5): the fragment
// header's next header is the first header of the fragmentable part, which
// for a datagram with AH or Destination Options after the fragment header
// is not the transport protocol the first fragment is decoded to.
func fragmentKey(p *packet.Packet) fragment.Key {
	k := fragment.Key{Src: p.Src, Dst: p.Dst, ID: p.FragID}
	if p.Family == 4 {
		k.Proto = uint8(p.Proto)
	}
	return k
}

func fragmentValue(mark uint32, routeID, endpointID uint16) uint64 {
	return uint64(mark) | uint64(routeID)<<32 | uint64(endpointID)<<48
}

func splitFragmentValue(v uint64) (mark uint32, routeID, endpointID uint16) {
	return uint32(v), uint16(v >> 32), uint16(v >> 48)
}
