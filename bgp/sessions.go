package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"
)

// SessionState is a BGP FSM state, lower case as in RFC 4271.
type SessionState string

// The BGP session states.
const (
	StateUnknown     SessionState = "unknown"
	StateIdle        SessionState = "idle"
	StateConnect     SessionState = "connect"
	StateActive      SessionState = "active"
	StateOpenSent    SessionState = "opensent"
	StateOpenConfirm SessionState = "openconfirm"
	StateEstablished SessionState = "established"
)

func sessionState(s api.PeerState_SessionState) SessionState {
	switch s {
	case api.PeerState_IDLE:
		return StateIdle
	case api.PeerState_CONNECT:
		return StateConnect
	case api.PeerState_ACTIVE:
		return StateActive
	case api.PeerState_OPENSENT:
		return StateOpenSent
	case api.PeerState_OPENCONFIRM:
		return StateOpenConfirm
	case api.PeerState_ESTABLISHED:
		return StateEstablished
	}
	return StateUnknown
}

// session is what the speaker remembers about one neighbour's session
// across peer re-creation.
type session struct {
	state SessionState
	since time.Time // when state was entered
	flaps uint64    // established -> anything else
}

// sessionBook collects GoBGP peer events and the per-neighbour history.
type sessionBook struct {
	mu       sync.Mutex
	pending  []*api.Peer
	sessions map[string]*session // by GoBGP neighbour address
}

func newSessionBook() *sessionBook { return &sessionBook{sessions: map[string]*session{}} }

func (b *sessionBook) queue(p *api.Peer) {
	b.mu.Lock()
	b.pending = append(b.pending, p)
	b.mu.Unlock()
}

// transition is one observed state change.
type transition struct {
	key      string
	old, new SessionState
}

// drain applies the queued events and returns the state changes.
func (b *sessionBook) drain(now time.Time) []transition {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []transition
	for _, p := range b.pending {
		key := p.GetState().GetNeighborAddress()
		if key == "" {
			key = p.GetConf().GetNeighborAddress()
		}
		st := sessionState(p.GetState().GetSessionState())
		s := b.sessions[key]
		if s == nil {
			s = &session{state: StateUnknown}
			b.sessions[key] = s
		}
		if s.state == st {
			continue
		}
		if s.state == StateEstablished {
			s.flaps++
		}
		out = append(out, transition{key: key, old: s.state, new: st})
		s.state, s.since = st, now
	}
	b.pending = b.pending[:0]
	return out
}

func (b *sessionBook) get(key string) session {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.sessions[key]; s != nil {
		return *s
	}
	return session{state: StateUnknown}
}

// onEvent runs on GoBGP's watcher goroutine: queue and wake the loop only.
func (s *Speaker) onEvent(r *api.WatchEventResponse) {
	if pe := r.GetPeer(); pe != nil && pe.GetPeer() != nil && pe.GetType() == api.WatchEventResponse_PeerEvent_STATE {
		s.sessions.queue(pe.GetPeer())
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// run logs session changes and republishes gateways after every event,
// and periodically re-checks admin states and gateways.
func (s *Speaker) run(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(resyncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
			s.reconcileAdmin(ctx)
		}
		for _, tr := range s.sessions.drain(time.Now()) {
			s.logTransition(tr)
		}
		s.refreshGateways(ctx)
	}
}

func (s *Speaker) logTransition(tr transition) {
	reason := ""
	if tr.old == StateEstablished {
		reason = s.reasons.get(tr.key)
		if a, err := netip.ParseAddr(tr.key); err == nil {
			s.mu.Lock()
			if s.bfd[bfdKey(a)] == bfdDown {
				reason = "BFD down: " + s.bfdReason[bfdKey(a)]
			}
			s.mu.Unlock()
		}
	}
	s.cfg.logger.Info("bgp session state", "peer", tr.key, "old", string(tr.old), "new", string(tr.new), "reason", reason)
}

// refreshGateways lists the default routes in GoBGP's global RIB and
// publishes those from configured peers that BFD does not report down.
func (s *Speaker) refreshGateways(ctx context.Context) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.mu.Lock()
	usable := make(map[netip.Addr]peerSpec, len(s.peers))
	for a, spec := range s.peers {
		if !s.heldByBFD(spec) {
			usable[bfdKey(a)] = spec
		}
	}
	s.mu.Unlock()

	var g Gateways
	for _, fam := range []*api.Family{familyV4, familyV6} {
		var found []learnedDefault
		err := s.srv.ListPath(ctx, &api.ListPathRequest{TableType: api.TableType_GLOBAL, Family: fam}, func(d *api.Destination) {
			found = append(found, learnedDefaults(d)...)
		})
		if err != nil {
			return // keep the last published set; the next tick retries
		}
		for _, l := range found {
			spec, ok := usable[l.peer]
			if !ok {
				continue
			}
			nh := l.nextHop
			if nh.Is6() && nh.IsLinkLocalUnicast() {
				nh = nh.WithZone(spec.iface)
			}
			gw := Gateway{Router: spec.name, Peer: spec.addr, NextHop: nh, Interface: spec.iface}
			if fam == familyV4 {
				g.IPv4 = append(g.IPv4, gw)
			} else {
				g.IPv6 = append(g.IPv6, gw)
			}
		}
	}
	sortGateways(g.IPv4)
	sortGateways(g.IPv6)
	if s.gateways.publish(g) {
		s.cfg.logger.Info("bgp gateways changed", "ipv4", gatewayList(g.IPv4), "ipv6", gatewayList(g.IPv6))
	}
}

func gatewayList(l []Gateway) string {
	parts := make([]string, len(l))
	for i, g := range l {
		parts[i] = g.Peer.String() + " via " + g.NextHop.String()
	}
	return strings.Join(parts, ",")
}

// GatewayUpdates returns the channel on which every change of the gateway
// set is delivered. It holds at most one set, the latest; read it from one
// goroutine. The sets are shared: do not modify them.
func (s *Speaker) GatewayUpdates() <-chan Gateways { return s.gateways.ch }

// Gateways returns the current gateway set.
func (s *Speaker) Gateways() Gateways { return s.gateways.current() }

// EstablishedSince reports when the BGP session with addr (any zone) last
// became established, and false when it is not established now.
func (s *Speaker) EstablishedSince(addr netip.Addr) (time.Time, bool) {
	k := bfdKey(addr)
	s.mu.Lock()
	var keys []string
	for a, spec := range s.peers {
		if bfdKey(a) == k {
			keys = append(keys, spec.key())
		}
	}
	s.mu.Unlock()
	for _, key := range keys {
		if sess := s.sessions.get(key); sess.state == StateEstablished {
			return sess.since, true
		}
	}
	return time.Time{}, false
}

// PeerStats is a snapshot of one peer.
type PeerStats struct {
	Router    string
	Peer      netip.Addr
	State     SessionState
	AdminDown bool          // disabled by BFD coupling
	Uptime    time.Duration // time in State established, else 0
	Announced uint64        // prefixes advertised to the peer
	Received  uint64        // prefixes received (before the import policy)
	Accepted  uint64        // prefixes in the RIB after the import policy
	Flaps     uint64        // established sessions lost since the speaker started
	// LastDownReason is why the session last left established, as GoBGP
	// reported it ("" if it never did).
	LastDownReason string
}

// Stats returns a snapshot of every configured peer, sorted by address.
func (s *Speaker) Stats(ctx context.Context) ([]PeerStats, error) {
	s.mu.Lock()
	out := make([]PeerStats, 0, len(s.peers))
	for a, spec := range s.peers {
		out = append(out, PeerStats{Router: spec.name, Peer: a, AdminDown: s.disabled[a]})
	}
	s.mu.Unlock()
	counts := map[string][3]uint64{}
	err := s.srv.ListPeer(ctx, &api.ListPeerRequest{EnableAdvertised: true}, func(p *api.Peer) {
		var c [3]uint64
		for _, af := range p.GetAfiSafis() {
			st := af.GetState()
			c[0] += st.GetAdvertised()
			c[1] += st.GetReceived()
			c[2] += st.GetAccepted()
		}
		counts[p.GetConf().GetNeighborAddress()] = c
	})
	accepted, lerr := s.acceptedByPeer(ctx)
	now := time.Now()
	for i := range out {
		key := out[i].Peer.String()
		sess := s.sessions.get(key)
		out[i].State, out[i].Flaps = sess.state, sess.flaps
		if sess.state == StateEstablished {
			out[i].Uptime = now.Sub(sess.since)
		}
		c := counts[key]
		out[i].Announced, out[i].Received = c[0], c[1]
		out[i].Accepted = accepted[bfdKey(out[i].Peer)]
		out[i].LastDownReason = s.reasons.get(key)
	}
	slices.SortFunc(out, func(a, b PeerStats) int { return a.Peer.Compare(b.Peer) })
	return out, errors.Join(err, lerr)
}

// acceptedByPeer counts the paths each peer has in the global RIB, that is
// after the import policy. (GoBGP's own per-peer "accepted" counter ignores
// the global import policy.)
func (s *Speaker) acceptedByPeer(ctx context.Context) (map[netip.Addr]uint64, error) {
	out := map[netip.Addr]uint64{}
	for _, fam := range []*api.Family{familyV4, familyV6} {
		err := s.srv.ListPath(ctx, &api.ListPathRequest{TableType: api.TableType_GLOBAL, Family: fam}, func(d *api.Destination) {
			for _, p := range d.GetPaths() {
				if a, err := netip.ParseAddr(p.GetNeighborIp()); err == nil && !p.GetIsWithdraw() {
					out[bfdKey(a)]++
				}
			}
		})
		if err != nil {
			return out, fmt.Errorf("list global rib: %w", err)
		}
	}
	return out, nil
}
