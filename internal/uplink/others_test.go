package uplink

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/sllbrd/sllbrd/bfd"
)

// otherEvents records what HandleOtherSessions receives.
type otherEvents struct {
	mu  sync.Mutex
	evs []bfd.Event
}

func (o *otherEvents) handle(ev bfd.Event) {
	o.mu.Lock()
	o.evs = append(o.evs, ev)
	o.mu.Unlock()
}

func (o *otherEvents) take() []bfd.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	evs := o.evs
	o.evs = nil
	return evs
}

// TestOtherSessions: a session another owner adds to the Uplink's BFD
// server survives Apply, and its events go to that owner only: no BGP
// action, no change of the return path; the routers' own events do not go
// there, and a removed router session's late event does.
func TestOtherSessions(t *testing.T) {
	h := newHarness(t)
	var other otherEvents
	h.u.HandleOtherSessions(other.handle)
	endpoint := bfd.SessionConfig{Peer: netip.MustParseAddr("192.0.2.12")}
	if err := h.u.BFD().Add(endpoint); err != nil {
		t.Fatal(err)
	}
	st, _ := h.u.BFD().Stats(endpoint.Key())
	if err := h.u.Apply(context.Background(), routers()); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.u.BFD().Stats(endpoint.Key()); !ok {
		t.Fatal("Apply removed a session that is not a router's")
	}
	hops := h.nexthops()
	up := bfd.Event{Key: endpoint.Key(), LocalDiscriminator: st.LocalDiscriminator,
		Transition: bfd.Transition{Old: bfd.StateInit, New: bfd.StateUp}}
	down := up
	down.Transition = bfd.Transition{Old: bfd.StateUp, New: bfd.StateDown, Diag: bfd.DiagControlDetectExpired}
	h.u.onBFD(up)
	h.u.onBFD(down)
	if got := other.take(); !slices.Equal(got, []bfd.Event{up, down}) {
		t.Errorf("other sessions' handler got %+v, want the two events in order", got)
	}
	h.wantCalls(t)
	h.timers.fire()
	h.wantCalls(t)
	if got := h.nexthops(); !slices.Equal(got, hops) {
		t.Errorf("next hops %v after another session's events, want %v", got, hops)
	}

	h.bfd(staticGW, bfd.StateDown, bfd.StateUp, false)
	if got := other.take(); len(got) != 0 {
		t.Errorf("a router's event went to the other sessions' handler: %+v", got)
	}
	if !slices.Contains(h.nexthops(), staticGW) {
		t.Error("the router's own event was not acted upon")
	}
	key := bfd.Key{Peer: staticGW, Interface: "vlan-100"}
	old, _ := h.u.BFD().Stats(key)
	if err := h.u.Apply(context.Background(), routers()[:1]); err != nil {
		t.Fatal(err)
	}
	late := bfd.Event{Key: key, LocalDiscriminator: old.LocalDiscriminator,
		Transition: bfd.Transition{Old: bfd.StateUp, New: bfd.StateAdminDown, Diag: bfd.DiagAdministrativelyDown}}
	h.u.onBFD(late)
	if got := other.take(); !slices.Equal(got, []bfd.Event{late}) {
		t.Errorf("a removed router session's late event: handler got %+v, want it", got)
	}
}

// TestOtherSessionsWithoutHandler: without a handler, another session's
// events are dropped and act on nothing.
func TestOtherSessionsWithoutHandler(t *testing.T) {
	h := newHarness(t)
	endpoint := bfd.SessionConfig{Peer: netip.MustParseAddr("192.0.2.12")}
	if err := h.u.BFD().Add(endpoint); err != nil {
		t.Fatal(err)
	}
	st, _ := h.u.BFD().Stats(endpoint.Key())
	hops := h.nexthops()
	h.u.onBFD(bfd.Event{Key: endpoint.Key(), LocalDiscriminator: st.LocalDiscriminator,
		Transition: bfd.Transition{Old: bfd.StateUp, New: bfd.StateDown}})
	h.wantCalls(t)
	if got := h.nexthops(); !slices.Equal(got, hops) {
		t.Errorf("next hops %v, want %v", got, hops)
	}
}

// TestRouterSessionStats: the routers' sessions are reported, the server's
// other sessions (the endpoint liveness probes) are not.
func TestRouterSessionStats(t *testing.T) {
	h := newHarness(t)
	endpoint := bfd.SessionConfig{Peer: netip.MustParseAddr("192.0.2.12")}
	if err := h.u.BFD().Add(endpoint); err != nil {
		t.Fatal(err)
	}
	if err := h.u.Apply(context.Background(), routers()); err != nil {
		t.Fatal(err)
	}
	var got, all []bfd.Key
	for _, s := range h.u.RouterSessionStats() {
		got = append(got, s.Key)
	}
	for _, s := range h.u.BFD().AllStats() {
		if s.Key != endpoint.Key() {
			all = append(all, s.Key)
		}
	}
	cmpKey := func(a, b bfd.Key) int { return a.Peer.Compare(b.Peer) }
	slices.SortFunc(got, cmpKey)
	slices.SortFunc(all, cmpKey)
	if len(all) == 0 || !slices.Equal(got, all) {
		t.Errorf("router sessions %v, want every session but the endpoint's: %v", got, all)
	}
}
