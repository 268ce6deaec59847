package uplink

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/bgp"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/model"
)

type fakeSpeaker struct {
	mu          sync.Mutex
	calls       []string
	reasons     []string // PeerDown reasons, in order
	established map[netip.Addr]time.Time
	gws         chan bgp.Gateways
}

func (f *fakeSpeaker) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakeSpeaker) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeSpeaker) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeSpeaker) Apply(context.Context, []model.Router) error  { return nil }
func (f *fakeSpeaker) Announce(context.Context, []netip.Addr) error { return nil }
func (f *fakeSpeaker) PeerDown(_ context.Context, a netip.Addr, reason string) error {
	f.record("down " + a.String())
	f.mu.Lock()
	f.reasons = append(f.reasons, reason)
	f.mu.Unlock()
	return nil
}
func (f *fakeSpeaker) PeerUp(_ context.Context, a netip.Addr) error {
	f.record("up " + a.String())
	return nil
}
func (f *fakeSpeaker) EstablishedSince(a netip.Addr) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.established[a]
	return t, ok
}
func (f *fakeSpeaker) Shutdown(context.Context, time.Duration) error { return nil }
func (f *fakeSpeaker) GatewayUpdates() <-chan bgp.Gateways           { return f.gws }

// fakeTimers replaces time.AfterFunc: timers fire only when the test says.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	delay   time.Duration
	f       func()
	stopped bool
}

func (ft *fakeTimers) after(d time.Duration, f func()) func() bool {
	t := &fakeTimer{delay: d, f: f}
	ft.mu.Lock()
	ft.timers = append(ft.timers, t)
	ft.mu.Unlock()
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// fire runs the timers not stopped and forgets every timer; it returns
// the delays of those it ran.
func (ft *fakeTimers) fire() []time.Duration {
	ft.mu.Lock()
	timers := ft.timers
	ft.timers = nil
	ft.mu.Unlock()
	var fired []time.Duration
	for _, t := range timers {
		if !t.stopped {
			t.stopped = true
			fired = append(fired, t.delay)
			t.f()
		}
	}
	return fired
}

// pending returns the timers not stopped.
func (ft *fakeTimers) pending() []*fakeTimer {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var out []*fakeTimer
	for _, t := range ft.timers {
		if !t.stopped {
			out = append(out, t)
		}
	}
	return out
}

var (
	bgpGW    = netip.MustParseAddr("169.254.100.150")
	staticGW = netip.MustParseAddr("169.254.100.151")
	plainGW  = netip.MustParseAddr("169.254.100.152")
)

func routers() []model.Router {
	bfdOn := model.BFD{Enabled: true, MinTx: 300 * time.Millisecond, MinRx: 300 * time.Millisecond, Multiplier: 3}
	return []model.Router{
		{Name: "bgp", Address: bgpGW, Interface: "vlan-100", BGP: &model.BGP{LocalASN: 8103, RemoteASN: 4248829953}, BFD: bfdOn},
		{Name: "static", Address: staticGW, Interface: "vlan-100", BFD: bfdOn},
		{Name: "plain", Address: plainGW, Interface: "vlan-100"},
	}
}

type harness struct {
	u      *Uplink
	sp     *fakeSpeaker
	timers *fakeTimers
	clock  time.Time
	mu     sync.Mutex
	hops   []route.Nexthop
}

func newHarness(t *testing.T) *harness {
	h := &harness{sp: &fakeSpeaker{gws: make(chan bgp.Gateways, 1), established: map[netip.Addr]time.Time{}},
		timers: &fakeTimers{}, clock: time.Unix(1000, 0)}
	h.u = New(slog.New(slog.NewTextHandler(io.Discard, nil)), h.sp, func(n []route.Nexthop) {
		h.mu.Lock()
		h.hops = n
		h.mu.Unlock()
	})
	h.u.ctx = context.Background()
	h.u.now = func() time.Time { return h.clock }
	h.u.after = h.timers.after
	if err := h.u.Apply(context.Background(), routers()); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) nexthops() []netip.Addr {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []netip.Addr
	for _, n := range h.hops {
		out = append(out, n.Addr)
	}
	return out
}

// bfd delivers a state change of the current session with addr.
func (h *harness) bfd(addr netip.Addr, from, to bfd.State, peerAdminDown bool) {
	key := bfd.Key{Peer: addr, Interface: "vlan-100"}
	st, _ := h.u.BFD().Stats(key)
	h.u.onBFD(bfd.Event{Key: key, LocalDiscriminator: st.LocalDiscriminator,
		Transition: bfd.Transition{Old: from, New: to, PeerAdminDown: peerAdminDown, Diag: diagFor(to)}})
}

func diagFor(s bfd.State) bfd.Diag {
	if s == bfd.StateDown {
		return bfd.DiagControlDetectExpired
	}
	return bfd.DiagNone
}

// flap takes addr's session down at the current time, then up after
// downFor; BGP recovery timers stay pending.
func (h *harness) flap(addr netip.Addr, downFor time.Duration) {
	h.bfd(addr, bfd.StateUp, bfd.StateDown, false)
	h.clock = h.clock.Add(downFor)
	h.bfd(addr, bfd.StateDown, bfd.StateUp, false)
}

func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 2 s")
		}
	}
}

func (h *harness) wantCalls(t *testing.T, want ...string) {
	t.Helper()
	if got := h.sp.takeCalls(); !slices.Equal(got, want) {
		t.Fatalf("speaker calls %q, want %q", got, want)
	}
}

func TestStaticGatewayFollowsBFD(t *testing.T) {
	h := newHarness(t)
	if got := h.nexthops(); !slices.Equal(got, []netip.Addr{plainGW}) {
		t.Fatalf("before BFD: next hops %v, want only the router without BFD", got)
	}
	h.bfd(staticGW, bfd.StateDown, bfd.StateUp, false)
	if got := h.nexthops(); !slices.Contains(got, staticGW) {
		t.Fatalf("BFD up: %v lacks %v", got, staticGW)
	}
	h.bfd(staticGW, bfd.StateUp, bfd.StateDown, false)
	if got := h.nexthops(); slices.Contains(got, staticGW) {
		t.Fatalf("BFD down: %v still has %v", got, staticGW)
	}
}

func TestBFDDownTakesBGPDownAndUpBringsItBack(t *testing.T) {
	h := newHarness(t)
	h.bfd(bgpGW, bfd.StateDown, bfd.StateUp, false)
	if d := h.timers.fire(); !slices.Equal(d, []time.Duration{0}) {
		t.Fatalf("first BFD up: bring-ups %v, want one at once", d)
	}
	h.wantCalls(t, "up "+bgpGW.String()) // a no-op unless the speaker waits for BFD
	h.clock = h.clock.Add(time.Minute)
	h.bfd(bgpGW, bfd.StateUp, bfd.StateDown, false)
	h.wantCalls(t, "down "+bgpGW.String())
	h.bfd(bgpGW, bfd.StateDown, bfd.StateUp, false)
	h.timers.fire()
	h.wantCalls(t, "up "+bgpGW.String())
	if !slices.Equal(h.sp.reasons, []string{bfd.DiagControlDetectExpired.String()}) {
		t.Fatalf("PeerDown reasons %q: want the BFD diagnostic alone (the speaker adds \"BFD down: \")", h.sp.reasons)
	}
}

func TestPeerAdminDownIsNotAFailure(t *testing.T) {
	h := newHarness(t)
	h.bfd(bgpGW, bfd.StateDown, bfd.StateUp, false)
	h.bfd(staticGW, bfd.StateDown, bfd.StateUp, false)
	h.bfd(bgpGW, bfd.StateUp, bfd.StateDown, true)
	h.bfd(staticGW, bfd.StateUp, bfd.StateDown, true)
	if c := h.sp.Calls(); len(c) != 0 {
		t.Fatalf("peer AdminDown acted on as a failure: %v", c)
	}
	if got := h.nexthops(); !slices.Contains(got, staticGW) {
		t.Fatalf("static gateway dropped on peer AdminDown: %v", got)
	}
}

func TestLearnedGatewaysJoinTheReturnPath(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.u.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	v6 := netip.MustParseAddr("fe80::1%vlan-100")
	h.sp.gws <- bgp.Gateways{IPv4: []bgp.Gateway{{Peer: bgpGW, NextHop: bgpGW, Interface: "vlan-100"}},
		IPv6: []bgp.Gateway{{Peer: netip.MustParseAddr("fd00::150"), NextHop: v6, Interface: "vlan-100"}}}
	eventually(t, func() bool {
		got := h.nexthops()
		return slices.Contains(got, bgpGW) && slices.Contains(got, v6) && slices.Contains(got, plainGW)
	})
}

func TestDamping(t *testing.T) {
	var d damper
	now := time.Unix(1000, 0)
	for i, want := range []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second} {
		d.failed(now, time.Time{})
		if got := d.upDelay(now); got != want {
			t.Errorf("failure %d: delay %v, want %v", i+1, got, want)
		}
		now = now.Add(time.Second)
	}
	for range 10 {
		d.failed(now, time.Time{})
	}
	if got := d.upDelay(now); got != MaxUpDelay {
		t.Errorf("many failures: %v, want the cap %v", got, MaxUpDelay)
	}
	if got := d.upDelay(now.Add(DampingWindow)); got != 0 {
		t.Errorf("after a quiet window: %v, want 0", got)
	}
}

func TestApplyManagesBFDSessions(t *testing.T) {
	h := newHarness(t)
	if n := len(h.u.BFD().AllStats()); n != 2 {
		t.Fatalf("%d BFD sessions, want 2 (the routers with BFD)", n)
	}
	if err := h.u.Apply(context.Background(), routers()[2:]); err != nil {
		t.Fatal(err)
	}
	if n := len(h.u.BFD().AllStats()); n != 0 {
		t.Fatalf("%d BFD sessions after removing their routers", n)
	}
}

func TestMultihopRouterGetsMultihopSession(t *testing.T) {
	h := newHarness(t)
	r := routers()
	r[0].BFD.Multihop = true
	r[0].BFD.LocalAddress = netip.MustParseAddr("169.254.100.1")
	if err := h.u.Apply(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.u.BFD().Stats(bfd.Key{Peer: bgpGW, Interface: "vlan-100"}); ok {
		t.Fatal("the single-hop session is still configured")
	}
	st, ok := h.u.BFD().Stats(bfd.Key{Peer: bgpGW, Interface: "vlan-100", Multihop: true})
	if !ok || !st.Config.Multihop || st.Config.Local != r[0].BFD.LocalAddress {
		t.Fatalf("multihop session %+v (found %v), want multihop from %v", st.Config, ok, r[0].BFD.LocalAddress)
	}
}
