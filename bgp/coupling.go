package bgp

import (
	"context"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v3/api"
)

// PeerDown reports that BFD declared the session with addr down. Before it
// returns, the peer's gateways are gone from the published set and its BGP
// session is being torn down (NOTIFICATION Cease/Administrative Shutdown
// carrying reason). The peer stays disabled, also across Apply, until
// PeerUp. Unknown addresses are remembered for when the router appears.
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

// wantDown: BFD reported the peer down, or it waits for a first BFD up.
// s.mu is held.
func (s *Speaker) wantDown(spec peerSpec) bool {
	st := s.bfd[bfdKey(spec.addr)]
	return st == bfdDown || (s.cfg.waitForBFD && spec.bfd && st != bfdUp)
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
	k := bfdKey(spec.addr)
	comm := "BFD down"
	if r := s.bfdReason[k]; r != "" {
		comm += ": " + r
	}
	if len(comm) > 128 { // RFC 9003 limit for the shutdown communication
		comm = comm[:128]
	}
	err := s.srv.DisablePeer(ctx, &api.DisablePeerRequest{Address: spec.key(), Communication: comm})
	if err != nil {
		return fmt.Errorf("disable peer %s (%s): %w", spec.addr, spec.name, err)
	}
	s.disabled[spec.addr] = true
	s.cfg.logger.Info("bgp peer disabled", "peer", spec.addr, "router", spec.name, "reason", comm)
	return nil
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
