package bgp

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	api "github.com/osrg/gobgp/v3/api"
)

// TestBFDHoldFollowsConfiguration: a peer held down by BFD is released
// when its router's BFD is switched off, and a router deleted and
// re-created starts afresh instead of inheriting the old BFD state.
func TestBFDHoldFollowsConfiguration(t *testing.T) {
	ctx := context.Background()
	gw := netip.MustParseAddr(gwV4)
	t.Run("BFD switched off", func(t *testing.T) {
		s, f := newTestSpeaker(t)
		if err := s.Apply(ctx, seedRouters()); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		f.rib["ipv4"] = []*api.Path{learnedPath(t, "0.0.0.0/0", gwV4, gwV4)}
		f.mu.Unlock()
		if err := s.PeerDown(ctx, gw, "control detection time expired"); err != nil {
			t.Fatal(err)
		}
		f.takeCalls()
		off := seedRouters()
		off[0].BFD.Enabled = false
		if err := s.Apply(ctx, off); err != nil {
			t.Fatal(err)
		}
		wantCalls(t, f, "delete "+gwV4, "add "+gwV4+" down=false")
		if g := s.Gateways(); len(g.IPv4) != 1 {
			t.Fatalf("gateways %+v: the router without BFD must be usable again", g)
		}
		if err := s.Apply(ctx, seedRouters()); err != nil { // BFD on again: no longer held
			t.Fatal(err)
		}
		wantCalls(t, f)
	})
	t.Run("router re-created while BFD down", func(t *testing.T) {
		s, f := newTestSpeaker(t)
		recreate(t, s, f, func() error { return s.PeerDown(ctx, gw, "control detection time expired") })
		wantCalls(t, f, "add "+gwV4+" down=false")
	})
	t.Run("re-created with wait for BFD", func(t *testing.T) {
		s, f := newTestSpeaker(t, WithWaitForBFD(true))
		recreate(t, s, f, func() error { return s.PeerUp(ctx, gw) })
		wantCalls(t, f, "add "+gwV4+" down=true") // waits for its new BFD session
		off := seedRouters()
		off[0].BFD.Enabled = false
		if err := s.Apply(ctx, off); err != nil {
			t.Fatal(err)
		}
		wantCalls(t, f, "delete "+gwV4, "add "+gwV4+" down=false") // nothing to wait for
		if err := s.Apply(ctx, seedRouters()); err != nil {
			t.Fatal(err)
		}
		wantCalls(t, f, "disable "+gwV4) // BFD on again: waits again
	})
}

// recreate applies the seed routers, runs bfd (a BFD report about the first
// one), deletes that router and creates it again; the calls of the last
// step stay recorded.
func recreate(t *testing.T, s *Speaker, f *fakeServer, bfd func() error) {
	t.Helper()
	ctx := context.Background()
	if err := s.Apply(ctx, seedRouters()); err != nil {
		t.Fatal(err)
	}
	if err := bfd(); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, seedRouters()[1:]); err != nil {
		t.Fatal(err)
	}
	f.takeCalls()
	if err := s.Apply(ctx, seedRouters()); err != nil {
		t.Fatal(err)
	}
}

// TestBFDDownCommunication: the Cease NOTIFICATION says "BFD down: " once,
// followed by the BFD reason.
func TestBFDDownCommunication(t *testing.T) {
	s, f := newTestSpeaker(t)
	ctx := context.Background()
	if err := s.Apply(ctx, seedRouters()); err != nil {
		t.Fatal(err)
	}
	if err := s.PeerDown(ctx, netip.MustParseAddr(gwV4), "control detection time expired"); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.comms) != 1 || f.comms[0] != "BFD down: control detection time expired" {
		t.Fatalf("communications %q", f.comms)
	}
}

func TestShutdownCommunicationLength(t *testing.T) {
	for _, reason := range []string{"", "x", strings.Repeat("a", 200), strings.Repeat("é", 100)} {
		c := shutdownCommunication(reason)
		if len(c) > 128 || !utf8.ValidString(c) || !strings.HasPrefix(c, "BFD down") || strings.Count(c, "BFD down") != 1 {
			t.Errorf("reason %q: communication %q (%d bytes)", reason, c, len(c))
		}
	}
}

func TestEstablishedSince(t *testing.T) {
	s, _ := newTestSpeaker(t)
	if err := s.Apply(context.Background(), seedRouters()); err != nil {
		t.Fatal(err)
	}
	gw := netip.MustParseAddr(gwV4)
	report := func(st api.PeerState_SessionState) {
		s.sessions.queue(&api.Peer{State: &api.PeerState{NeighborAddress: gwV4, SessionState: st}})
		s.sessions.drain(time.Now())
	}
	if _, ok := s.EstablishedSince(gw); ok {
		t.Fatal("established before any event")
	}
	before := time.Now()
	report(api.PeerState_ESTABLISHED)
	if since, ok := s.EstablishedSince(gw); !ok || since.Before(before) {
		t.Fatalf("EstablishedSince = %v, %v; want true and a time after %v", since, ok, before)
	}
	report(api.PeerState_IDLE)
	if _, ok := s.EstablishedSince(gw); ok {
		t.Fatal("established after the session went idle")
	}
}
