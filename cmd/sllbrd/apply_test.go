package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/bgp"
	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/reconcile"
	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

// fakeDataplane serves every VIP of the state's routes.
type fakeDataplane struct{}

func (fakeDataplane) Apply(st *model.State, _ []route.Nexthop) (dataplane.Applied, error) {
	var vips []netip.Addr
	for _, r := range st.Routes {
		for _, d := range r.Destinations {
			vips = append(vips, d.Addr())
		}
	}
	return dataplane.Applied{Generation: st.Generation, VIPs: vips, ServedVIPs: vips}, nil
}

// fakeRouting fails its first failRouters Applies and records what it is
// told to announce.
type fakeRouting struct {
	mu          sync.Mutex
	failRouters int
	closed      bool // the speaker was shut down
	applies     int
	announced   [][]netip.Addr
}

func (f *fakeRouting) Apply(context.Context, []model.Router) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applies++
	if f.closed {
		return fmt.Errorf("bgp: %w", bgp.ErrClosed)
	}
	if f.failRouters > 0 {
		f.failRouters--
		return errors.New("add peer 192.0.2.1: gobgp says no")
	}
	return nil
}

func (f *fakeRouting) Announce(_ context.Context, vips []netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return bgp.ErrClosed
	}
	f.announced = append(f.announced, slices.Clone(vips))
	return nil
}

func (f *fakeRouting) all() [][]netip.Addr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.announced)
}

func (f *fakeRouting) state() (applies int, last []netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.announced); n > 0 {
		last = f.announced[n-1]
	}
	return f.applies, last
}

// applyHarness is the configuration source, the reconcile loop and the
// applier of sllbrd with fakes for the kernel and for BGP/BFD.
type applyHarness struct {
	source  *configSource
	loop    *reconcile.Loop
	routing *fakeRouting
	metrics *metrics.Config
}

func newApplyHarness(t *testing.T, routing *fakeRouting) *applyHarness {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &applyHarness{routing: routing, metrics: metrics.NewConfig()}
	a := &applier{log: log, dataplane: fakeDataplane{}, routing: routing, metrics: h.metrics}
	h.loop = reconcile.New(a.apply, reconcile.WithMinInterval(time.Millisecond), reconcile.WithBackoff(time.Millisecond, 20*time.Millisecond))
	h.loop.SetGateways(harnessGateways) // the return path announcements wait for
	h.source = &configSource{log: log, loop: h.loop, metrics: h.metrics, problems: map[string]int{}}
	a.problems = h.source.setDataplaneProblems
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = h.loop.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// harnessGateways is the return path of newApplyHarness's applies: a
// gateway of each family.
var harnessGateways = []route.Nexthop{{Addr: netip.MustParseAddr("192.0.2.1"), Interface: "eth0"},
	{Addr: netip.MustParseAddr("2001:db8::1"), Interface: "eth0"}}

func stateWithVIP(gen uint64, vip string) *model.State {
	return &model.State{Generation: gen,
		Routes:  []model.Route{{Name: "default/r", Destinations: []netip.Prefix{netip.MustParsePrefix(vip + "/32")}}},
		Routers: []model.Router{{Name: "default/gw", Address: netip.MustParseAddr("192.0.2.1"), Interface: "eth0"}}}
}

// componentMetric returns the value of metric name{component=component}
// (0 when absent).
func componentMetric(t *testing.T, c prometheus.Collector, name, component string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "component" && l.GetValue() == component {
					return m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
	}
}

// TestGatewayRouterErrorsAreRetried: a failure to apply the GatewayRouters
// fails the reconcile pass, shows in readiness and in the component
// metrics, and is retried until it succeeds.
func TestGatewayRouterErrorsAreRetried(t *testing.T) {
	h := newApplyHarness(t, &fakeRouting{failRouters: 3})
	failing := func() float64 {
		return componentMetric(t, h.metrics, "sllbrd_config_component_failing", componentRouters)
	}
	h.source.emit(manifest.Update{State: stateWithVIP(1, "20.0.0.1")})
	eventually(t, "a failed attempt seen by readiness and metrics", func() bool {
		s := h.loop.Status()
		return !s.Ready() && strings.Contains(s.Reason(), componentRouters+": add peer 192.0.2.1") && failing() == 1
	})
	eventually(t, "retried until applied", func() bool { return h.loop.Status().Ready() })
	if applies, _ := h.routing.state(); applies < 4 {
		t.Fatalf("routers applied %d times, want the 3 failures retried", applies)
	}
	if got := failing(); got != 0 {
		t.Errorf("%s failing = %v after success", componentRouters, got)
	}
	if got := componentMetric(t, h.metrics, "sllbrd_config_component_failures_total", componentRouters); got != 3 {
		t.Errorf("%s failures = %v, want 3", componentRouters, got)
	}
}

// TestGatewayGoneWithdrawsVIPs: when the source reports the Gateway missing
// the VIPs are withdrawn (the last state stays programmed); when it comes
// back they are announced again. Other source errors keep them announced.
func TestGatewayGoneWithdrawsVIPs(t *testing.T) {
	h := newApplyHarness(t, &fakeRouting{})
	vip := []netip.Addr{netip.MustParseAddr("20.0.0.1")}
	announced := func(want []netip.Addr) func() bool {
		return func() bool { _, last := h.routing.state(); return slices.Equal(last, want) }
	}
	st := stateWithVIP(1, "20.0.0.1")
	h.source.emit(manifest.Update{State: st})
	eventually(t, "VIP announced", announced(vip))

	h.source.emit(manifest.Update{State: st, Err: errors.New("manifests.yaml: document 2: mapping values are not allowed")})
	h.source.emit(manifest.Update{State: st, Err: fmt.Errorf("%w %q is defined", translate.ErrNoGateway, "sllb-a")})
	eventually(t, "VIP withdrawn when the Gateway is gone", announced(nil))
	if ann := h.routing.all(); slices.ContainsFunc(ann[:len(ann)-1], func(v []netip.Addr) bool { return len(v) == 0 }) {
		t.Errorf("an unreadable configuration withdrew the VIPs: announcements %v", ann)
	}

	h.source.emit(manifest.Update{State: st})
	eventually(t, "VIP announced again when the Gateway is back", announced(vip))
	h.source.emit(manifest.Update{State: st, Err: fmt.Errorf("apiserver: %w default/sllb-a", translate.ErrNoGateway)})
	eventually(t, "VIP withdrawn again", announced(nil))
	next := stateWithVIP(2, "20.0.0.2")
	h.source.emit(manifest.Update{State: next})
	eventually(t, "the new Gateway's VIP announced", announced([]netip.Addr{netip.MustParseAddr("20.0.0.2")}))
}

// TestStoppedSpeakerIsNotAFailure: once sllbrd is stopping (the speaker was
// shut down after withdrawing the VIPs), passes of the loop do not fail.
func TestStoppedSpeakerIsNotAFailure(t *testing.T) {
	h := newApplyHarness(t, &fakeRouting{closed: true})
	h.source.emit(manifest.Update{State: stateWithVIP(1, "20.0.0.1")})
	eventually(t, "applied", func() bool { return h.loop.Status().Ready() })
	for _, c := range []string{componentRouters, componentAnnounce} {
		if got := componentMetric(t, h.metrics, "sllbrd_config_component_failures_total", c); got != 0 {
			t.Errorf("%s failures = %v, want 0", c, got)
		}
	}
}

// retiringDataplane reports routes of removed endpoints due for deletion.
type retiringDataplane struct{ at time.Time }

func (r retiringDataplane) Apply(st *model.State, _ []route.Nexthop) (dataplane.Applied, error) {
	return dataplane.Applied{Generation: st.Generation, RetireAt: r.at}, nil
}

type noRouting struct{}

func (noRouting) Apply(context.Context, []model.Router) error  { return nil }
func (noRouting) Announce(context.Context, []netip.Addr) error { return nil }

// TestApplyAsksForARunWhenRoutesRetire: the grace period of removed
// endpoints' routes ends in a later pass, which the applier asks for.
func TestApplyAsksForARunWhenRoutesRetire(t *testing.T) {
	at := time.Now().Add(3 * time.Second)
	var asked []time.Time
	a := &applier{log: slog.New(slog.NewTextHandler(io.Discard, nil)), dataplane: retiringDataplane{at: at},
		routing: noRouting{}, metrics: metrics.NewConfig(), problems: func(int) {},
		rerunBy: func(t time.Time) { asked = append(asked, t) }}
	if err := a.apply(context.Background(), reconcile.Desired{State: &model.State{Generation: 1}}); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || !asked[0].Equal(at) {
		t.Fatalf("asked for runs at %v, want one at %v", asked, at)
	}
	a.dataplane = retiringDataplane{}
	if err := a.apply(context.Background(), reconcile.Desired{State: &model.State{Generation: 1}}); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 {
		t.Fatalf("asked for a run with nothing retiring: %v", asked)
	}
}

// staticGatewayRouting makes each router a return-path next hop at once,
// as the uplink does for a static GatewayRouter without BFD.
type staticGatewayRouting struct {
	noRouting
	setGateways func([]route.Nexthop)
}

func (s staticGatewayRouting) Apply(_ context.Context, routers []model.Router) error {
	var hops []route.Nexthop
	for _, r := range routers {
		hops = append(hops, route.Nexthop{Addr: r.Address, Interface: r.Interface})
	}
	s.setGateways(hops)
	return nil
}

// gatewayRecorder records the return-path next hops of every apply.
type gatewayRecorder struct {
	mu     sync.Mutex
	passes [][]route.Nexthop
}

func (g *gatewayRecorder) Apply(st *model.State, gws []route.Nexthop) (dataplane.Applied, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.passes = append(g.passes, slices.Clone(gws))
	return dataplane.Applied{Generation: st.Generation}, nil
}

// TestFirstApplyProgramsStaticGateways: the static gateways a configuration
// names are the return path of the very apply that programs it, not of a
// later pass (until which the VIPs' replies, and with rp_filter the
// traffic to them, would be dropped).
func TestFirstApplyProgramsStaticGateways(t *testing.T) {
	rec := &gatewayRecorder{}
	a := &applier{log: slog.New(slog.NewTextHandler(io.Discard, nil)), dataplane: rec,
		metrics: metrics.NewConfig(), problems: func(int) {}}
	loop := reconcile.New(a.apply)
	a.routing = staticGatewayRouting{setGateways: loop.SetGateways}
	a.gateways = loop.Gateways
	st := stateWithVIP(1, "20.0.0.1")
	if err := a.apply(context.Background(), reconcile.Desired{State: st}); err != nil {
		t.Fatal(err)
	}
	want := []route.Nexthop{{Addr: st.Routers[0].Address, Interface: st.Routers[0].Interface}}
	if len(rec.passes) != 1 || !slices.Equal(rec.passes[0], want) {
		t.Errorf("return path programmed by the first apply: %v, want %v", rec.passes, want)
	}
}

// TestVIPsWaitForTheirFamilysReturnPath: a VIP is announced only once an
// apply has programmed a gateway of its family as the return path (until
// then the kernel drops the traffic the announcement would attract), each
// family on its own, and withdrawn when its family has none left.
func TestVIPsWaitForTheirFamilysReturnPath(t *testing.T) {
	routing := &fakeRouting{}
	a := &applier{log: slog.New(slog.NewTextHandler(io.Discard, nil)), dataplane: fakeDataplane{},
		routing: routing, metrics: metrics.NewConfig(), problems: func(int) {}}
	v4, v6 := netip.MustParseAddr("20.0.0.1"), netip.MustParseAddr("2001:db8:20::1")
	st := &model.State{Generation: 1, Routes: []model.Route{{Name: "default/r",
		Destinations: []netip.Prefix{netip.PrefixFrom(v4, 32), netip.PrefixFrom(v6, 128)}}}}
	g4, g6 := harnessGateways[0], harnessGateways[1]
	steps := []struct {
		what     string
		gateways []route.Nexthop
		want     []netip.Addr
	}{
		{"BGP and BFD coming up: no gateway yet", nil, []netip.Addr{}},
		{"the IPv4 gateway's default route programmed", []route.Nexthop{g4}, []netip.Addr{v4}},
		{"both families", []route.Nexthop{g4, g6}, []netip.Addr{v4, v6}},
		{"the IPv4 gateway lost", []route.Nexthop{g6}, []netip.Addr{v6}},
	}
	for _, s := range steps {
		if err := a.apply(context.Background(), reconcile.Desired{State: st, Gateways: s.gateways}); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if _, last := routing.state(); !slices.Equal(last, s.want) {
			t.Errorf("%s: announced %v, want %v", s.what, last, s.want)
		}
	}
}
