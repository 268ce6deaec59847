package main

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/liveness"
	"github.com/sllbrd/sllbrd/model"
)

// fakeBFDServer records the sessions the BFD probes run; addErr makes Add
// fail for an address.
type fakeBFDServer struct {
	sessions map[bfd.Key]bfd.SessionConfig
	discs    map[bfd.Key]uint32
	next     uint32
	addErr   map[netip.Addr]error
	sockErr  map[netip.Addr]string // a session's SocketError
	calls    []string
	handler  func(bfd.Event)
}

func newFakeBFDServer() *fakeBFDServer {
	return &fakeBFDServer{sessions: map[bfd.Key]bfd.SessionConfig{}, discs: map[bfd.Key]uint32{}, addErr: map[netip.Addr]error{},
		sockErr: map[netip.Addr]string{}}
}

func (f *fakeBFDServer) Add(c bfd.SessionConfig) error {
	f.calls = append(f.calls, "add "+c.Peer.String())
	if f.handler == nil {
		return errors.New("a session added before its events have a handler")
	}
	if err := f.addErr[c.Peer]; err != nil {
		return err
	}
	if _, ok := f.sessions[c.Key()]; ok {
		return bfd.ErrExists
	}
	f.next++
	f.sessions[c.Key()], f.discs[c.Key()] = c, f.next
	return nil
}

func (f *fakeBFDServer) Update(c bfd.SessionConfig) error {
	f.calls = append(f.calls, "update "+c.Peer.String())
	if _, ok := f.sessions[c.Key()]; !ok {
		return bfd.ErrNotFound
	}
	f.sessions[c.Key()] = c
	return nil
}

func (f *fakeBFDServer) Remove(k bfd.Key) error {
	f.calls = append(f.calls, "remove "+k.Peer.String())
	if _, ok := f.sessions[k]; !ok {
		return bfd.ErrNotFound
	}
	delete(f.sessions, k)
	return nil
}

func (f *fakeBFDServer) Stats(k bfd.Key) (bfd.Stats, bool) {
	_, ok := f.sessions[k]
	return bfd.Stats{Key: k, SessionStats: bfd.SessionStats{LocalDiscriminator: f.discs[k]}, SocketError: f.sockErr[k.Peer]}, ok
}

func (f *fakeBFDServer) takeCalls() []string {
	c := f.calls
	f.calls = nil
	return c
}

// event sends a transition of addr's current session.
func (f *fakeBFDServer) event(addr netip.Addr, t bfd.Transition) {
	k := bfd.Key{Peer: addr}
	f.handler(bfd.Event{Key: k, LocalDiscriminator: f.discs[k], Transition: t})
}

// changeLog collects what bfdLiveness reports.
type changeLog struct {
	mu sync.Mutex
	cs []bfdChange
}

func (l *changeLog) add(cs []bfdChange) {
	l.mu.Lock()
	l.cs = append(l.cs, cs...)
	l.mu.Unlock()
}

func (l *changeLog) take() []bfdChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := l.cs
	l.cs = nil
	return cs
}

var (
	bfdAddrA  = netip.MustParseAddr("169.111.100.11")
	bfdAddrB  = netip.MustParseAddr("fd00:111::12")
	bfdRouter = netip.MustParseAddr("169.111.100.150")
)

func newTestBFD(clock *fakeClock) (*bfdLiveness, *fakeBFDServer, *changeLog) {
	var log changeLog
	b := newBFDLiveness(slog.New(slog.DiscardHandler), clock.now, log.add)
	return b, newFakeBFDServer(), &log
}

func bind(b *bfdLiveness, srv *fakeBFDServer) {
	b.bind(srv, func(f func(bfd.Event)) { srv.handler = f })
}

// TestBFDLivenessSessions: one session per address, with the Service's
// timers (the stricter of two Services), none for a router's address, none
// before the server is bound (and the event handler set first), updated in
// place when the timers change, removed with the address.
func TestBFDLivenessSessions(t *testing.T) {
	clock := &fakeClock{t: goldenClock}
	b, srv, _ := newTestBFD(clock)
	slow := liveness.Config{Interval: 300 * time.Millisecond, Multiplier: 5, HoldDown: time.Second}
	fast := liveness.Config{Interval: 100 * time.Millisecond, Multiplier: 3, HoldDown: time.Second}
	targets := []liveness.Target{{Addr: bfdAddrA, Config: slow}, {Addr: netip.AddrFrom16(bfdAddrA.As16()), Config: fast},
		{Addr: bfdAddrB, Config: slow}, {Addr: bfdRouter, Config: slow}}
	routers := []model.Router{{Name: "gw", Address: bfdRouter, Interface: "vlan-100"}}
	b.set(targets, routers, nil)
	if len(srv.calls) != 0 || len(b.states()) != 0 {
		t.Fatalf("before bind: calls %v, states %v", srv.calls, b.states())
	}
	bind(b, srv)
	want := map[bfd.Key]bfd.SessionConfig{
		{Peer: bfdAddrA}: {Peer: bfdAddrA, DesiredMinTx: 100 * time.Millisecond, RequiredMinRx: 100 * time.Millisecond, DetectMultiplier: 3},
		{Peer: bfdAddrB}: {Peer: bfdAddrB, DesiredMinTx: 300 * time.Millisecond, RequiredMinRx: 300 * time.Millisecond, DetectMultiplier: 5},
	}
	if !maps.Equal(srv.sessions, want) {
		t.Fatalf("sessions %v, want %v", srv.sessions, want)
	}
	if n := b.stats().RouterAddresses; n != 1 {
		t.Errorf("router addresses not probed: %d, want 1", n)
	}
	srv.event(bfdAddrA, toUp)
	srv.takeCalls()

	targets[1].Config.Multiplier = 4 // A's stricter Service changes its timers
	b.set(targets[1:3], nil, nil)
	if got := srv.takeCalls(); !slices.Equal(got, []string{"update " + bfdAddrA.String()}) {
		t.Errorf("timers changed: calls %v, want one update", got)
	}
	if got := srv.sessions[bfd.Key{Peer: bfdAddrA}].DetectMultiplier; got != 4 {
		t.Errorf("multiplier %d after the update, want 4", got)
	}
	b.set(targets[2:3], nil, nil)
	if got := srv.takeCalls(); !slices.Equal(got, []string{"remove " + bfdAddrA.String()}) {
		t.Errorf("address gone: calls %v, want its removal", got)
	}
	if _, ok := b.states()[bfdAddrA]; ok || len(b.states()) != 1 {
		t.Errorf("states %v after the removal", b.states())
	}
	if n := b.stats(); n.RouterAddresses != 0 || n.AddErrors+n.UpdateErrors+n.RemoveErrors+n.InvalidConfigs != 0 {
		t.Errorf("counts %+v, want nothing failed and no router address left", n)
	}
}

// TestBFDLivenessEvents: the events of a session drive its machine and are
// reported; a router's event, an old instance's and our own AdminDown are
// not; the clock brings the never-up and hold-down transitions; the dead
// set follows.
func TestBFDLivenessEvents(t *testing.T) {
	clock := &fakeClock{t: goldenClock}
	b, srv, log := newTestBFD(clock)
	bind(b, srv)
	b.set([]liveness.Target{{Addr: bfdAddrA, Config: bfdLab}, {Addr: bfdAddrB, Config: bfdLab}}, nil, nil)
	clock.advance(time.Second)
	srv.event(bfdAddrA, toUp)
	srv.handler(bfd.Event{Key: bfd.Key{Peer: bfdRouter, Interface: "vlan-100"}, LocalDiscriminator: 1, Transition: upToDown})
	srv.handler(bfd.Event{Key: bfd.Key{Peer: bfdAddrA}, LocalDiscriminator: 99, Transition: upToDown})
	if cs := log.take(); len(cs) != 0 {
		t.Fatalf("changes %+v, want none", cs)
	}
	if next := b.tick(); !next.Equal(goldenClock.Add(3800 * time.Millisecond)) {
		t.Errorf("next tick %v, want B's start grace end", next)
	}
	clock.advance(2800 * time.Millisecond)
	b.tick()
	cs := log.take()
	if len(cs) != 1 || cs[0].Addr != bfdAddrB || cs[0].Alive || cs[0].cause != bfdNeverUp {
		t.Fatalf("after the start grace: changes %+v, want B dead, never up", cs)
	}
	srv.event(bfdAddrA, upToDown)
	cs = log.take()
	if len(cs) != 1 || cs[0].Addr != bfdAddrA || cs[0].Alive || cs[0].cause != bfdSessionDown || cs[0].diag != bfd.DiagControlDetectExpired {
		t.Fatalf("session down: changes %+v, want A dead", cs)
	}
	if d := b.dead(); !maps.Equal(d, map[netip.Addr]bool{bfdAddrA: true, bfdAddrB: true}) {
		t.Errorf("dead %v, want both", d)
	}
	srv.event(bfdAddrA, toUp)
	srv.event(bfdAddrB, toUp)
	srv.event(bfdAddrB, localAdmin) // our own: ignored
	clock.advance(5 * time.Second)
	b.tick()
	if cs := log.take(); len(cs) != 2 || !cs[0].Alive || !cs[1].Alive || cs[0].Detection != 5*time.Second {
		t.Fatalf("after the hold-down: changes %+v, want both alive", cs)
	}
	if d := b.dead(); len(d) != 0 {
		t.Errorf("dead %v, want none", d)
	}
	if n := b.stats(); n.NeverUp != 1 || n.SessionDown != 1 || n.PeerStopped != 0 {
		t.Errorf("counts %+v, want one never up, one session down", n)
	}
	// The target side restarting takes its session down on purpose: counted,
	// and no change (its flows stay).
	srv.event(bfdAddrA, peerStopped)
	clock.advance(time.Minute)
	b.tick()
	if cs := log.take(); len(cs) != 0 {
		t.Fatalf("target side stopped: changes %+v, want none", cs)
	}
	if d := b.dead(); len(d) != 0 {
		t.Errorf("target side stopped: dead %v, want none", d)
	}
	if n := b.stats(); n.PeerStopped != 1 || n.SessionDown != 1 {
		t.Errorf("counts %+v, want one peer stopped, no new death", n)
	}
	srv.event(bfdAddrB, toUp)
	if n := b.stats(); !maps.Equal(n.SessionUp, map[netip.Addr]bool{bfdAddrA: false, bfdAddrB: true}) || n.SocketErrors != 0 {
		t.Errorf("sessions up %v, socket errors %d, want B's only, none", n.SessionUp, n.SocketErrors)
	}
	srv.sockErr[bfdAddrA] = "bfd: socket: too many open files"
	if n := b.stats(); n.SocketErrors != 1 {
		t.Errorf("socket errors %d, want A's", n.SocketErrors)
	}
}

// TestBFDLivenessFailures: a session the server refuses is counted, not
// probed (so not dead) and added when the retry succeeds; a configuration
// BFD cannot run is counted and not probed; a link-local address is probed
// over the Gateway's only network.
func TestBFDLivenessFailures(t *testing.T) {
	clock := &fakeClock{t: goldenClock}
	b, srv, log := newTestBFD(clock)
	bind(b, srv)
	srv.addErr[bfdAddrA] = errors.New("refused")
	linkLocal := netip.MustParseAddr("fe80::12")
	tooMany := netip.MustParseAddr("169.111.100.13")
	many := bfdLab
	many.Multiplier = 300
	b.set([]liveness.Target{{Addr: bfdAddrA, Config: bfdLab}, {Addr: linkLocal, Config: bfdLab}, {Addr: tooMany, Config: many}},
		nil, []model.Network{{Name: "macvlan-nad-1", Interface: "net1"}})
	if _, ok := srv.sessions[bfd.Key{Peer: linkLocal, Interface: "net1"}]; !ok || len(srv.sessions) != 1 {
		t.Fatalf("sessions %v, want the link-local address's on net1 only", srv.sessions)
	}
	clock.advance(time.Minute)
	if next := b.tick(); !next.Equal(clock.now().Add(bfdRetry)) {
		t.Errorf("next tick %v, want a retry in %v", next, bfdRetry)
	}
	for _, c := range log.take() {
		if c.Addr == bfdAddrA || c.Addr == tooMany {
			t.Errorf("an address without a session changed: %+v", c)
		}
	}
	if d := b.dead(); d[bfdAddrA] || d[tooMany] {
		t.Errorf("dead %v: an address that is not probed is dead", d)
	}
	if n := b.stats(); n.AddErrors != 2 || n.InvalidConfigs != 1 {
		t.Errorf("counts %+v, want 2 refused adds (the first and the retry), 1 invalid", n)
	}
	delete(srv.addErr, bfdAddrA)
	clock.advance(bfdRetry)
	b.tick()
	if _, ok := srv.sessions[bfd.Key{Peer: bfdAddrA}]; !ok {
		t.Fatal("the refused session was not added again")
	}
	if st, ok := b.states()[bfdAddrA]; !ok || !st.Alive || !st.Since.Equal(clock.now()) {
		t.Errorf("state %+v, want alive since it was added", st)
	}
	b.set(nil, nil, []model.Network{{Interface: "net1"}, {Interface: "net2"}})
	b.set([]liveness.Target{{Addr: linkLocal, Config: bfdLab}}, nil, []model.Network{{Interface: "net1"}, {Interface: "net2"}})
	if len(srv.sessions) != 0 || b.stats().InvalidConfigs != 2 {
		t.Errorf("link-local with two networks: sessions %v, counts %+v; want none, invalid", srv.sessions, b.stats())
	}
}

// TestBFDLivenessRun: run ticks at the machines' deadlines on the real
// clock: an address without a session Up is dead after its start grace.
func TestBFDLivenessRun(t *testing.T) {
	var log changeLog
	b := newBFDLiveness(slog.New(slog.DiscardHandler), time.Now, log.add)
	srv := newFakeBFDServer()
	bind(b, srv)
	cfg := liveness.Config{Interval: 10 * time.Millisecond, Multiplier: 1}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	start := time.Now()
	b.set([]liveness.Target{{Addr: bfdAddrA, Config: cfg}}, nil, nil)
	for len(b.dead()) == 0 {
		if time.Since(start) > bfd.UpSlack+5*time.Second {
			t.Fatal("not dead long after the start grace")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(start); took < bfd.UpSlack {
		t.Errorf("dead after %v, before the start grace %v", took, bfd.UpSlack+cfg.Detection())
	}
	if cs := log.take(); len(cs) != 1 || cs[0].cause != bfdNeverUp {
		t.Errorf("changes %+v, want one, never up", cs)
	}
}
