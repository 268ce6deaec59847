package bfd

import "time"

// Receive processes a packet that passed Packet.Unmarshal and was
// demultiplexed to this session, following the reception procedure of RFC
// 5880 section 6.8.6 from "Set bfd.RemoteDiscr" on. It reports a state
// change, if any.
func (s *Session) Receive(now time.Time, p *Packet) (Transition, bool) {
	s.c.packetsIn++
	s.remoteDisc = p.MyDiscriminator // "Set bfd.RemoteDiscr to the value of My Discriminator."
	s.remoteState = p.State          // "Set bfd.RemoteSessionState to the value of the State (Sta) field."
	s.remoteDiag = p.Diag
	// bfd.RemoteDemandMode is not kept: Demand mode is not supported, so the
	// peer's D bit has no effect on us (6.6: it only matters if we also ask
	// for it).
	s.remoteMinRx = fromUsec(p.RequiredMinRxUsec) // "Set bfd.RemoteMinRxInterval"
	s.remoteMinTx = fromUsec(p.DesiredMinTxUsec)
	s.remoteMult = p.DetectMult
	// Required Min Echo RX is ignored: the Echo function is not supported.

	// "If the Final (F) bit is set and the local system has sent a Poll
	// Sequence, the Poll Sequence MUST be terminated" and the new
	// parameters take effect (6.8.3).
	if p.Final && s.polling {
		s.polling = false
		s.effTx, s.effRx = s.advTx, s.advRx
	}
	// "Update the transmit interval as described in section 6.8.2" and
	// "Update the Detection Time as described in section 6.8.4".
	s.pullInTx(now)
	s.detectAt = now.Add(detectionTime(s.remoteMult, s.effRx, s.remoteMinTx))

	// "If bfd.SessionState is AdminDown: Discard the packet."
	if s.state == StateAdminDown {
		s.c.discards[DiscardLocalAdminDown]++
		return Transition{}, false
	}
	t, changed := s.stateTable(now, p.State)
	// "If the Poll (P) bit is set, send a BFD Control packet to the remote
	// system with the Poll (P) bit clear, and the Final (F) bit set."
	if p.Poll {
		s.finalDue = true
	}
	return t, changed
}

// stateTable applies the state transitions of RFC 5880 section 6.8.6 (the
// state diagram of section 6.2) for a packet carrying remote state rs.
func (s *Session) stateTable(now time.Time, rs State) (Transition, bool) {
	switch {
	// "If received state is AdminDown: If bfd.SessionState is not Down, set
	// bfd.LocalDiag to 3 (Neighbor signaled session down), set
	// bfd.SessionState to Down."
	case rs == StateAdminDown:
		if s.state == StateDown {
			return Transition{}, false
		}
		t := s.setState(now, StateDown, DiagNeighborSignaledDown)
		t.PeerAdminDown = true
		return t, true
	// "If bfd.SessionState is Down: If received State is Down, set
	// bfd.SessionState to Init; Else if received State is Init, set
	// bfd.SessionState to Up."
	case s.state == StateDown && rs == StateDown:
		return s.setState(now, StateInit, s.localDiag), true
	case s.state == StateDown && rs == StateInit:
		return s.setState(now, StateUp, DiagNone), true
	// "Else if bfd.SessionState is Init: If received State is Init or Up,
	// set bfd.SessionState to Up."
	case s.state == StateInit && (rs == StateInit || rs == StateUp):
		return s.setState(now, StateUp, DiagNone), true
	// "Else (bfd.SessionState is Up): If received State is Down, set
	// bfd.LocalDiag to 3 (Neighbor signaled session down), set
	// bfd.SessionState to Down."
	case s.state == StateUp && rs == StateDown:
		return s.setState(now, StateDown, DiagNeighborSignaledDown), true
	}
	return Transition{}, false
}

// Expire handles the detection timer (RFC 5880 section 6.8.4). When a
// Detection Time has passed without a packet it clears bfd.RemoteDiscr
// (6.8.1: "this variable MUST be set to zero") and, if the session was Init
// or Up, moves it to Down with diagnostic 1.
func (s *Session) Expire(now time.Time) (Transition, bool) {
	if s.detectAt.IsZero() || now.Before(s.detectAt) {
		return Transition{}, false
	}
	s.detectAt = time.Time{}
	s.remoteDisc = 0
	s.remoteState = StateDown
	if s.state != StateInit && s.state != StateUp {
		return Transition{}, false
	}
	// 6.8.4: "the local system MUST set bfd.SessionState to Down and
	// bfd.LocalDiag to 1 (Control Detection Time Expired)."
	return s.setState(now, StateDown, DiagControlDetectExpired), true
}

// SetAdminDown holds the session administratively down (RFC 5880 section
// 6.8.16): state AdminDown, diagnostic 7, transmitted at once.
func (s *Session) SetAdminDown(now time.Time) (Transition, bool) {
	if s.state == StateAdminDown {
		return Transition{}, false
	}
	return s.setState(now, StateAdminDown, DiagAdministrativelyDown), true
}

// Enable releases an administratively down session to Down.
func (s *Session) Enable(now time.Time) (Transition, bool) {
	if s.state != StateAdminDown {
		return Transition{}, false
	}
	return s.setState(now, StateDown, DiagNone), true
}

// CountDiscard records a packet for this session discarded by the caller.
func (s *Session) CountDiscard(r DiscardReason) {
	if r < NumDiscardReasons {
		s.c.discards[r]++
	}
}
