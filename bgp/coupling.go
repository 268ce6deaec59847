package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"unicode/utf8"

	api "github.com/osrg/gobgp/v3/api"
)

// PeerDown reports that BFD declared the session with addr down; reason is
// the BFD diagnostic ("Control Detection Time Expired"). Before it
// returns, the peer's gateways are gone from the published set and its BGP
// session is being torn down with a NOTIFICATION Cease whose communication
// (RFC 9003) reads "BFD down: " + reason. GoBGP v3 offers no way to send
// the Cease subcode "BFD Down" (10, RFC 9384): DisablePeer sends
// Administrative Shutdown (subcode 2), see doc.go. The peer stays disabled,
// also across Apply, until PeerUp, as long as its router has BFD enabled.
// An address not configured yet is remembered until the next Apply that
// does not configure it with BFD.
func (s *Speaker) PeerDown(ctx context.Context, addr netip.Addr, reason string) error {
	k := bfdKey(addr)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.bfd[k] = bfdDown
	s.bfdReason[k] = reason
	s.mu.Unlock()
	s.refreshGateways(ctx)

	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncAdminMatching(ctx, k)
}

// PeerUp reports that BFD declared the session with addr up. A peer that
// PeerDown (or WithWaitForBFD) held down is re-created at once, so it
// connects again within one or two seconds.
func (s *Speaker) PeerUp(ctx context.Context, addr netip.Addr) error {
	k := bfdKey(addr)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.bfd[k] = bfdUp
	delete(s.bfdReason, k)
	err := s.syncAdminMatching(ctx, k)
	s.mu.Unlock()
	s.refreshGateways(ctx)
	return err
}

func bfdKey(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

// heldByBFD: the peer's router has BFD and BFD reported it down. s.mu is
// held.
func (s *Speaker) heldByBFD(spec peerSpec) bool {
	return spec.bfd && s.bfd[bfdKey(spec.addr)] == bfdDown
}

// wantDown: the peer's router has BFD, and BFD reported it down or it waits
// for a first BFD up. A router without BFD is never held. s.mu is held.
func (s *Speaker) wantDown(spec peerSpec) bool {
	st := s.bfd[bfdKey(spec.addr)]
	return spec.bfd && (st == bfdDown || (s.cfg.waitForBFD && st != bfdUp))
}

// forgetBFD drops the BFD state of every address that no configured peer
// supervises with BFD: a router deleted, or with BFD switched off, is no
// longer held, and when it comes back (or BFD is switched on again) it
// starts afresh, waiting for BFD if WithWaitForBFD says so. s.mu is held.
func (s *Speaker) forgetBFD() {
	supervised := map[netip.Addr]bool{}
	for a, spec := range s.peers {
		if spec.bfd {
			supervised[bfdKey(a)] = true
		}
	}
	for k := range s.bfd {
		if !supervised[k] {
			delete(s.bfd, k)
			delete(s.bfdReason, k)
		}
	}
}

// syncAdminMatching applies syncAdmin to every peer with address k (several
// link-local peers may share an address on different interfaces).
func (s *Speaker) syncAdminMatching(ctx context.Context, k netip.Addr) error {
	for a := range s.peers {
		if bfdKey(a) == k {
			if err := s.syncAdmin(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// syncAdmin disables the peer at a if it should be down, or re-creates it
// enabled if we had disabled it. s.mu is held.
func (s *Speaker) syncAdmin(ctx context.Context, a netip.Addr) error {
	spec := s.peers[a]
	down := s.wantDown(spec)
	switch {
	case down && !s.disabled[a]:
		return s.disablePeer(ctx, spec)
	case !down && s.disabled[a]:
		if err := s.deletePeer(ctx, spec); err != nil {
			return err
		}
		return s.addPeer(ctx, spec)
	}
	return nil
}

func (s *Speaker) disablePeer(ctx context.Context, spec peerSpec) error {
	comm := shutdownCommunication(s.bfdReason[bfdKey(spec.addr)])
	err := s.srv.DisablePeer(ctx, &api.DisablePeerRequest{Address: spec.key(), Communication: comm})
	if err != nil {
		return fmt.Errorf("disable peer %s (%s): %w", spec.addr, spec.name, err)
	}
	s.disabled[spec.addr] = true
	s.cfg.logger.Info("bgp peer disabled", "peer", spec.addr, "router", spec.name, "reason", comm)
	return nil
}

// shutdownCommunication is the text of the Cease NOTIFICATION that takes a
// session down on BFD down: "BFD down: " and the BFD reason, at most 128
// bytes (RFC 9003 section 2), cut on a UTF-8 character boundary.
func shutdownCommunication(reason string) string {
	comm := "BFD down"
	if reason != "" {
		comm += ": " + reason
	}
	const maxLen = 128
	if len(comm) <= maxLen {
		return comm
	}
	cut := maxLen
	for cut > 0 && !utf8.RuneStart(comm[cut]) {
		cut--
	}
	return comm[:cut]
}

// reconcileAdmin re-issues a DisablePeer that GoBGP dropped (its FSM
// accepts one pending admin request at a time and drops the others).
func (s *Speaker) reconcileAdmin(ctx context.Context) {
	up := map[string]bool{}
	err := s.srv.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		up[p.GetConf().GetNeighborAddress()] = p.GetState().GetAdminState() == api.PeerState_UP
	})
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for a, spec := range s.peers {
		if s.disabled[a] && up[spec.key()] {
			s.cfg.logger.Debug("bgp peer still admin up, disabling again", "peer", a)
			_ = s.disablePeer(ctx, spec)
		}
	}
}
