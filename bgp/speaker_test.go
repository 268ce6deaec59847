package bgp

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
)

func newTestSpeaker(t *testing.T, opts ...Option) (*Speaker, *fakeServer) {
	t.Helper()
	cfg := defaultConfig()
	cfg.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.routerID = netip.MustParseAddr("192.0.2.1")
	for _, o := range opts {
		o(&cfg)
	}
	f := newFakeServer()
	s, err := start(context.Background(), f, cfg, newReasonBook())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cancel(); <-s.done })
	f.takeCalls() // the start-up policies
	return s, f
}

func wantCalls(t *testing.T, f *fakeServer, want ...string) {
	t.Helper()
	if got := f.takeCalls(); !slices.Equal(got, want) {
		t.Fatalf("GoBGP calls\n got %q\nwant %q", got, want)
	}
}

func TestApplyTouchesOnlyChangedPeer(t *testing.T) {
	s, f := newTestSpeaker(t)
	ctx := context.Background()
	routers := seedRouters()
	if err := s.Apply(ctx, routers); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "add "+gwV4+" down=false", "add "+gwV6+" down=false")

	if err := s.Apply(ctx, routers); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f) // idempotent

	changed := seedRouters()
	changed[1].BGP.HoldTime = 9 * time.Second
	changed[0].BGP.LocalPort = 179 // ignored without source port binding
	if err := s.Apply(ctx, changed); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "delete "+gwV6, "add "+gwV6+" down=false")

	if err := s.Apply(ctx, changed[:1]); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "delete "+gwV6)
}

func TestPeerDownRemovesGatewayAtOnceAndPeerUpRecreates(t *testing.T) {
	s, f := newTestSpeaker(t)
	ctx := context.Background()
	if err := s.Apply(ctx, seedRouters()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.rib["ipv4"] = []*api.Path{learnedPath(t, "0.0.0.0/0", gwV4, gwV4)}
	f.rib["ipv6"] = []*api.Path{learnedPath(t, "::/0", gwV6, gwV6)}
	f.mu.Unlock()
	s.refreshGateways(ctx)
	if g := s.Gateways(); len(g.IPv4) != 1 || len(g.IPv6) != 1 || g.IPv4[0].Router != "default/gateway-a-v4" {
		t.Fatalf("gateways %+v", g)
	}
	f.takeCalls()

	if err := s.PeerDown(ctx, netip.MustParseAddr(gwV4), "detect timeout"); err != nil {
		t.Fatal(err)
	}
	// The fake RIB still has the route: the speaker must drop it itself.
	if g := s.Gateways(); len(g.IPv4) != 0 || len(g.IPv6) != 1 {
		t.Fatalf("after PeerDown gateways %+v, want IPv6 only", g)
	}
	wantCalls(t, f, "disable "+gwV4)
	if err := s.Apply(ctx, seedRouters()); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f) // stays down across Apply

	if err := s.PeerUp(ctx, netip.MustParseAddr(gwV4)); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "delete "+gwV4, "add "+gwV4+" down=false")
	if g := s.Gateways(); len(g.IPv4) != 1 {
		t.Fatalf("after PeerUp gateways %+v", g)
	}
	if err := s.PeerUp(ctx, netip.MustParseAddr(gwV4)); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f) // already up
}

func TestWaitForBFD(t *testing.T) {
	s, f := newTestSpeaker(t, WithWaitForBFD(true))
	ctx := context.Background()
	if err := s.Apply(ctx, seedRouters()); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "add "+gwV4+" down=true", "add "+gwV6+" down=true")
	if err := s.PeerUp(ctx, netip.MustParseAddr(gwV6)); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "delete "+gwV6, "add "+gwV6+" down=false")
}

func TestAnnounceIsDiffBasedAndShutdownWithdrawsFirst(t *testing.T) {
	s, f := newTestSpeaker(t)
	ctx := context.Background()
	a := netip.MustParseAddr
	if err := s.Announce(ctx, []netip.Addr{a("20.0.0.1"), a("fd20::1")}); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "announce 1", "announce 2")
	if err := s.Announce(ctx, []netip.Addr{a("fd20::1"), a("20.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f)
	if err := s.Announce(ctx, []netip.Addr{a("20.0.0.1"), a("20.0.0.3")}); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "withdraw 2", "announce 3")
	if err := s.Shutdown(ctx, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "withdraw 1", "withdraw 3", "stop")
	if err := s.Announce(ctx, nil); err != ErrClosed {
		t.Fatalf("Announce after Shutdown: %v, want ErrClosed", err)
	}
}

func TestSessionBookCountsFlaps(t *testing.T) {
	b := newSessionBook()
	for _, st := range []api.PeerState_SessionState{api.PeerState_ACTIVE, api.PeerState_ESTABLISHED, api.PeerState_ESTABLISHED, api.PeerState_IDLE, api.PeerState_ESTABLISHED} {
		b.queue(&api.Peer{State: &api.PeerState{NeighborAddress: gwV4, SessionState: st}})
	}
	tr := b.drain(time.Now())
	if len(tr) != 4 || tr[3].old != StateIdle || tr[3].new != StateEstablished {
		t.Fatalf("transitions %+v", tr)
	}
	if s := b.get(gwV4); s.flaps != 1 || s.state != StateEstablished {
		t.Fatalf("session %+v, want 1 flap, established", s)
	}
}
