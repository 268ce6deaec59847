package bfd

import "time"

// Transmit fills p with the next packet to send, if one is due at now, and
// reports whether it did. A due Final (answer to the peer's Poll) is sent
// regardless of the transmit timer (RFC 5880 section 6.8.7); callers loop
// until Transmit returns false.
func (s *Session) Transmit(now time.Time, p *Packet) bool {
	if s.finalDue {
		s.finalDue = false
		s.fill(p)
		// 6.8.7: "transmit a BFD Control packet with the Poll (P) bit
		// clear and the Final (F) bit set as soon as practicable, without
		// respect to the transmission timer".
		p.Final = true
		s.sent()
		return true
	}
	if !s.txNow && now.Before(s.nextTx) {
		return false
	}
	forced := s.txNow
	s.txNow = false
	s.nextTx = now.Add(s.jitter())
	// 6.8.7: "A system MUST NOT periodically transmit BFD Control packets
	// if bfd.RemoteMinRxInterval is zero."
	if s.remoteMinRx == 0 && !forced {
		return false
	}
	s.fill(p)
	// 6.5: periodic packets carry P until the Final arrives; 4.1: P and F
	// are never both set.
	p.Poll = s.polling
	s.sent()
	return true
}

func (s *Session) sent() {
	s.c.packetsOut++
	if s.state == StateAdminDown {
		s.c.adminDownOut++
	}
}

// fill writes the session variables into p (RFC 5880 section 6.8.7).
func (s *Session) fill(p *Packet) {
	*p = Packet{
		Version:           Version,
		Diag:              s.localDiag,
		State:             s.state,
		DetectMult:        s.cfg.DetectMultiplier,
		Length:            PacketLen,
		MyDiscriminator:   s.localDisc,
		YourDiscriminator: s.remoteDisc,
		DesiredMinTxUsec:  usec(s.advTx),
		RequiredMinRxUsec: usec(s.advRx),
		// RequiredMinEchoRxUsec stays 0: "the transmitting system does
		// not support the receipt of BFD Echo packets".
	}
}

// Deadline returns the earliest time at which Transmit or Expire has work.
// A zero time means at once.
func (s *Session) Deadline() time.Time {
	if s.finalDue || s.txNow {
		return time.Time{}
	}
	d := s.nextTx
	if !s.detectAt.IsZero() && s.detectAt.Before(d) {
		d = s.detectAt
	}
	return d
}

// SessionStats is a snapshot of a session's variables and counters.
type SessionStats struct {
	State, RemoteState  State
	LocalDiag           Diag
	RemoteDiag          Diag
	LocalDiscriminator  uint32
	RemoteDiscriminator uint32
	// TxInterval is the negotiated transmit interval before jitter.
	TxInterval time.Duration
	// DetectionTime is the current Detection Time; zero before the peer
	// has been heard.
	DetectionTime        time.Duration
	RemoteDetectMult     uint8
	Polling              bool
	PacketsIn            uint64
	PacketsOut           uint64
	AdminDownPacketsSent uint64
	UpTransitions        uint64
	DownTransitions      uint64
	Discards             DiscardCounts
}

// Stats returns a snapshot of the session.
func (s *Session) Stats() SessionStats {
	return SessionStats{
		State:                s.state,
		RemoteState:          s.remoteState,
		LocalDiag:            s.localDiag,
		RemoteDiag:           s.remoteDiag,
		LocalDiscriminator:   s.localDisc,
		RemoteDiscriminator:  s.remoteDisc,
		TxInterval:           txInterval(s.effTx, s.remoteMinRx),
		DetectionTime:        detectionTime(s.remoteMult, s.effRx, s.remoteMinTx),
		RemoteDetectMult:     s.remoteMult,
		Polling:              s.polling,
		PacketsIn:            s.c.packetsIn,
		PacketsOut:           s.c.packetsOut,
		AdminDownPacketsSent: s.c.adminDownOut,
		UpTransitions:        s.c.upTransitions,
		DownTransitions:      s.c.downTransitions,
		Discards:             s.c.discards,
	}
}
