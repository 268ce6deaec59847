package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"

	"github.com/sllbrd/sllbrd/model"
)

// ErrClosed is returned by methods called after Shutdown.
var ErrClosed = errors.New("bgp speaker is shut down")

type bfdState uint8

const (
	bfdUnknown bfdState = iota
	bfdUp
	bfdDown
)

// Speaker is an embedded GoBGP instance with the peers, VIPs and BFD state
// given to it. Create it with New; all methods are safe for concurrent use.
type Speaker struct {
	srv       bgpServer
	cfg       config
	reasons   *reasonBook
	gateways  *gatewayPublisher
	sessions  *sessionBook
	cancel    context.CancelFunc
	done      chan struct{}
	kick      chan struct{}
	localAddr localAddrFunc
	refreshMu sync.Mutex // serializes gateway computation and publication

	mu        sync.Mutex // guards the fields below and orders GoBGP changes
	peers     map[netip.Addr]peerSpec
	disabled  map[netip.Addr]bool        // peers created or set admin-down by us
	bfd       map[netip.Addr]bfdState    // by address without zone
	bfdReason map[netip.Addr]string      // why BFD reported down
	vips      map[netip.Addr][]byte      // announced VIP -> GoBGP path UUID
	attrs     map[netip.Addr]exportAttrs // installed attribute policies
	resend    map[netip.Addr]bool        // peers owed a soft reset out
	closed    bool
}

// New starts an embedded GoBGP server with the sllbrd import/export
// policies and no peers.
func New(ctx context.Context, opts ...Option) (*Speaker, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.routerID.IsValid() {
		cfg.routerID = LocalRouterID()
	}
	reasons := newReasonBook()
	srv := server.NewBgpServer(server.LoggerOption(newGoBGPLogger(cfg.logger, reasons)))
	go srv.Serve()
	s, err := start(ctx, srv, cfg, reasons)
	if err != nil {
		srv.Stop()
		return nil, err
	}
	return s, nil
}

// start configures srv and launches the event loop.
func start(ctx context.Context, srv bgpServer, cfg config, reasons *reasonBook) (*Speaker, error) {
	if !cfg.routerID.Unmap().Is4() {
		return nil, fmt.Errorf("router id %q is not an IPv4 address", cfg.routerID)
	}
	err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn:        cfg.globalASN,
		RouterId:   cfg.routerID.Unmap().String(),
		ListenPort: cfg.listenPort,
	}})
	if err != nil {
		return nil, fmt.Errorf("start gobgp: %w", err)
	}
	if err := installPolicies(ctx, srv); err != nil {
		return nil, err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	s := &Speaker{
		srv: srv, cfg: cfg, reasons: reasons,
		gateways: newGatewayPublisher(), sessions: newSessionBook(),
		cancel: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1),
		peers: map[netip.Addr]peerSpec{}, disabled: map[netip.Addr]bool{},
		bfd: map[netip.Addr]bfdState{}, bfdReason: map[netip.Addr]string{},
		vips: map[netip.Addr][]byte{}, localAddr: interfaceLocalAddr,
		attrs: map[netip.Addr]exportAttrs{}, resend: map[netip.Addr]bool{},
	}
	err = srv.WatchEvent(loopCtx, &api.WatchEventRequest{
		Peer:  &api.WatchEventRequest_Peer{},
		Table: &api.WatchEventRequest_Table{Filters: []*api.WatchEventRequest_Table_Filter{{Type: api.WatchEventRequest_Table_Filter_POST_POLICY}}},
	}, s.onEvent)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch gobgp events: %w", err)
	}
	go s.run(loopCtx)
	return s, nil
}

// Apply makes the peers match the BGP routers (routers without BGP are
// ignored). Only peers whose session parameters changed are re-created.
// Invalid routers are skipped and reported in the returned error.
func (s *Speaker) Apply(ctx context.Context, routers []model.Router) error {
	want, verr := peerSpecs(routers, s.cfg.globalASN)
	for a, spec := range want {
		if !s.cfg.bindSource {
			spec.localPort = 0
		} else if spec.localPort != 0 {
			spec.localAddr = s.localAddr(spec.iface, spec.addr)
		}
		want[a] = spec
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	errs := []error{verr}
	plan := diffPeers(s.peers, want)
	for _, a := range plan.remove {
		errs = append(errs, s.deletePeer(ctx, s.peers[a]))
	}
	// The attribute policies are in place before a new peer's first UPDATE.
	attrsErr := s.syncAttrs(ctx, want)
	for _, a := range plan.add {
		delete(s.resend, a) // a new session gets the attributes anyway
		errs = append(errs, s.addPeer(ctx, want[a]))
	}
	for _, a := range plan.update {
		if s.peers[a].attrs != want[a].attrs {
			s.resend[a] = true
		}
		s.peers[a] = want[a]
	}
	s.forgetBFD()
	for _, a := range plan.update {
		errs = append(errs, s.syncAdmin(ctx, a))
	}
	errs = append(errs, attrsErr)
	if attrsErr == nil {
		errs = append(errs, s.resendAttrs(ctx))
	}
	s.mu.Unlock()
	s.refreshGateways(ctx)
	return errors.Join(errs...)
}

// addPeer creates spec's peer, disabled if BFD says so. s.mu is held.
func (s *Speaker) addPeer(ctx context.Context, spec peerSpec) error {
	down := s.wantDown(spec)
	if err := s.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: apiPeer(spec, s.cfg, down)}); err != nil {
		return fmt.Errorf("add peer %s (%s): %w", spec.addr, spec.name, err)
	}
	s.peers[spec.addr] = spec
	s.disabled[spec.addr] = down
	s.cfg.logger.Info("bgp peer configured", "peer", spec.addr, "router", spec.name,
		"localASN", spec.localASN, "remoteASN", spec.remoteASN, "adminDown", down)
	return nil
}

// deletePeer removes spec's peer. s.mu is held.
func (s *Speaker) deletePeer(ctx context.Context, spec peerSpec) error {
	delete(s.peers, spec.addr)
	delete(s.disabled, spec.addr)
	if err := s.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: spec.key()}); err != nil {
		return fmt.Errorf("delete peer %s (%s): %w", spec.addr, spec.name, err)
	}
	s.cfg.logger.Info("bgp peer removed", "peer", spec.addr, "router", spec.name)
	return nil
}

// Announce makes the advertised VIPs exactly vips: new ones are added,
// missing ones withdrawn. Invalid addresses are skipped and reported.
func (s *Speaker) Announce(ctx context.Context, vips []netip.Addr) error {
	want, verr := normalizeVIPs(vips)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return errors.Join(verr, s.announceLocked(ctx, want))
}

func (s *Speaker) announceLocked(ctx context.Context, want map[netip.Addr]bool) error {
	var errs []error
	add, del := diffVIPs(s.vips, want)
	for _, v := range del {
		fam := familyV4
		if v.Is6() {
			fam = familyV6
		}
		err := s.srv.DeletePath(ctx, &api.DeletePathRequest{TableType: api.TableType_GLOBAL, Family: fam, Uuid: s.vips[v]})
		if err != nil {
			errs = append(errs, fmt.Errorf("withdraw VIP %s: %w", v, err))
			continue
		}
		delete(s.vips, v)
	}
	for _, v := range add {
		p, err := vipPath(v)
		if err == nil {
			var r *api.AddPathResponse
			if r, err = s.srv.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: p}); err == nil {
				s.vips[v] = r.GetUuid()
				continue
			}
		}
		errs = append(errs, fmt.Errorf("announce VIP %s: %w", v, err))
	}
	return errors.Join(errs...)
}

// Shutdown withdraws every VIP, waits drain (or until ctx ends) so the
// gateways move traffic away, then stops GoBGP, which closes all sessions
// with a Cease NOTIFICATION. (GoBGP v3 cannot end its Serve goroutine; it
// stays parked until the process exits.)
func (s *Speaker) Shutdown(ctx context.Context, drain time.Duration) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	err := s.announceLocked(ctx, nil)
	s.closed = true
	s.mu.Unlock()
	t := time.NewTimer(drain)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	s.cancel()
	<-s.done
	if stopErr := s.srv.StopBgp(context.Background(), &api.StopBgpRequest{}); stopErr != nil {
		err = errors.Join(err, fmt.Errorf("stop gobgp: %w", stopErr))
	}
	return err
}
