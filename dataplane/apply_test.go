package dataplane

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/internal/tableroute"
	"github.com/sllbrd/sllbrd/model"
)

// fakeKernel records calls and the engine generation visible at each.
type fakeKernel struct {
	engine   *Engine
	calls    []string
	added    []route.EndpointRoute // endpoints of the last Add
	pruned   []route.EndpointRoute // endpoints of the last Prune (what it kept)
	paths    []route.ReturnPath
	cfg      nft.Config
	routeErr error
	ruleErr  error
	chains   map[string][]string // what Chains returns
}

// fakeRoutes is the fake's route.Reconciler side.
type fakeRoutes struct{ *fakeKernel }

func (k fakeRoutes) Add(eps []route.EndpointRoute, paths []route.ReturnPath) error {
	k.calls = append(k.calls, fmt.Sprint("routes-add@", k.engine.Generation()))
	k.added, k.paths = eps, paths
	return k.routeErr
}

func (k fakeRoutes) Prune(eps []route.EndpointRoute, paths []route.ReturnPath) error {
	k.calls = append(k.calls, fmt.Sprint("routes-prune@", k.engine.Generation()))
	k.pruned = eps
	return nil
}

func (k fakeRoutes) Cleanup() error { k.calls = append(k.calls, "routes-cleanup"); return nil }

func (k fakeRoutes) Gateways(uint32) ([]tableroute.Hop, error) { return nil, nil }

func (k *fakeKernel) Program(c nft.Config) error {
	k.calls = append(k.calls, fmt.Sprint("rules@", k.engine.Generation()))
	k.cfg = c
	return k.ruleErr
}

func (k *fakeKernel) Chains() (map[string][]string, error) { return k.chains, nil }

func (k *fakeKernel) Cleanup() error { k.calls = append(k.calls, "rules-cleanup"); return nil }

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func programmer(opts ...Option) (*Programmer, *fakeKernel, *fakeClock) {
	e := NewEngine(opts...)
	k := &fakeKernel{engine: e}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	return NewProgrammer(e, k, fakeRoutes{k}, nft.QueueRange{First: 0, Count: 2}, false, ReturnTable, WithClock(clock.now)), k, clock
}

func withNetwork(st *model.State) *model.State {
	st.Gateway = model.Gateway{Namespace: "ns", Name: "sllb-a", Networks: []model.Network{{Name: "nad", Interface: "net1"}}}
	return st
}

func TestApplyOrdersKernelChanges(t *testing.T) {
	p, k, _ := programmer()
	gw := []route.Nexthop{{Addr: netip.MustParseAddr("169.254.100.150"), Interface: "vlan-100"}}
	got, err := p.Apply(withNetwork(testState()), gw)
	if err != nil {
		t.Fatal(err)
	}
	// Routes are added while the old (no) configuration is live; the plan
	// is committed before the VIPs start being queued; stale routes are
	// deleted last.
	if want := []string{"routes-add@0", "rules@1", "routes-prune@1"}; !slices.Equal(k.calls, want) {
		t.Fatalf("calls %v, want %v", k.calls, want)
	}
	if len(k.added) != 7 || k.added[0].Interface != "net1" || k.added[0].Table != k.added[0].Mark || k.added[0].Mark != FirstMark {
		t.Errorf("endpoint routes = %+v", k.added)
	}
	if p := k.paths[0]; p.Table != ReturnTable || len(p.VIPs) != 2 || len(p.Gateways) != 1 {
		t.Errorf("return path = %+v", p)
	}
	if len(k.cfg.VIPs) != 2 || k.cfg.Queues.Count != 2 {
		t.Errorf("nft config = %+v", k.cfg)
	}
	if len(got.ServedVIPs) != 2 || got.Generation != 1 || !got.RetireAt.IsZero() {
		t.Errorf("applied = %+v", got)
	}
	k.calls = nil
	if err := p.Cleanup(); err != nil || !slices.Equal(k.calls, []string{"rules-cleanup", "routes-cleanup"}) {
		t.Errorf("Cleanup: %v, calls %v", err, k.calls)
	}
}

func TestApplyServesOnlyVIPsWithReadyEndpoints(t *testing.T) {
	p, _, _ := programmer()
	st := withNetwork(testState())
	st.Routes = append(st.Routes, model.Route{Name: "ns/lonely", Service: "service-empty", Priority: 1,
		Destinations: []netip.Prefix{netip.MustParsePrefix("20.0.0.9/32")}, Protocols: []model.Protocol{model.ProtoTCP}})
	got, err := p.Apply(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got.ServedVIPs, netip.MustParseAddr("20.0.0.9")) || !slices.Contains(got.VIPs, netip.MustParseAddr("20.0.0.9")) {
		t.Errorf("VIPs %v served %v: 20.0.0.9 must be queued but not served", got.VIPs, got.ServedVIPs)
	}
}

func TestApplyKernelErrorIsReported(t *testing.T) {
	p, k, _ := programmer()
	k.routeErr = errors.New("netlink: no such device")
	got, err := p.Apply(withNetwork(testState()), nil)
	if err == nil || got.Generation != 1 {
		t.Fatalf("err %v, applied %+v: a failed apply must be reported", err, got)
	}
	if !slices.Equal(k.calls, []string{"routes-add@0", "rules@1", "routes-prune@1"}) {
		t.Errorf("a route failure stopped the other steps: %v", k.calls)
	}
	if p.engine.Generation() != 1 {
		t.Errorf("plan not committed after a partial route failure")
	}
}

// TestApplyQueuesNothingNewWithoutCatchAll: while the catch-all blackhole
// is not in place, the queue rules are not updated (a first Apply queues
// nothing at all), and the failure is reported.
func TestApplyQueuesNothingNewWithoutCatchAll(t *testing.T) {
	p, k, _ := programmer()
	k.routeErr = fmt.Errorf("add rule: %w", route.ErrNoCatchAll)
	if _, err := p.Apply(withNetwork(testState()), nil); !errors.Is(err, route.ErrNoCatchAll) {
		t.Fatalf("Apply = %v, want ErrNoCatchAll reported", err)
	}
	if slices.Contains(k.calls, "rules@1") {
		t.Errorf("queue rules programmed without the catch-all: %v", k.calls)
	}
}

func TestApplyWithoutNetworkReportsProblem(t *testing.T) {
	p, k, _ := programmer()
	got, err := p.Apply(testState(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.added) != 0 || len(got.Problems) != 1 {
		t.Fatalf("endpoints %v problems %v", k.added, got.Problems)
	}
}

// without returns testState at generation gen without the endpoints for
// which drop is true.
func without(gen uint64, drop func(model.Endpoint) bool) *model.State {
	st := withNetwork(testState())
	st.Generation = gen
	svc := &st.Services[0]
	svc.Endpoints = slices.DeleteFunc(svc.Endpoints, drop)
	return st
}

func hasRoute(eps []route.EndpointRoute, mark uint32, via string) bool {
	return slices.ContainsFunc(eps, func(e route.EndpointRoute) bool {
		return e.Mark == mark && e.Via == netip.MustParseAddr(via)
	})
}

// markOf returns the mark Apply gave the endpoint with address a.
func markOf(t *testing.T, eps []route.EndpointRoute, a string) uint32 {
	t.Helper()
	for _, e := range eps {
		if e.Via == netip.MustParseAddr(a) {
			return e.Mark
		}
	}
	t.Fatalf("no route for %s in %v", a, eps)
	return 0
}

// TestApplyKeepsRemovedEndpointForGrace: a removed endpoint's routes (both
// families of a dual-stack slot, or the one family it lost) stay in the
// routes added and kept until the grace period after the commit that
// removed it has ended; then Prune no longer keeps them and the mark is
// released only after that Prune.
func TestApplyKeepsRemovedEndpointForGrace(t *testing.T) {
	p, k, clock := programmer()
	if _, err := p.Apply(withNetwork(testState()), nil); err != nil {
		t.Fatal(err)
	}
	mark1, mark0 := markOf(t, k.added, "169.111.100.11"), markOf(t, k.added, "169.111.100.10")
	grace := 2*time.Second + VerdictMargin
	// Slot 1 leaves entirely; slot 0 loses its IPv4 address.
	gone := func(e model.Endpoint) bool { return e.ID == 1 || e.Addr == addr("169.111.100.10") }
	clock.t = clock.t.Add(time.Second)
	removedAt := clock.t
	got, err := p.Apply(without(2, gone), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !got.RetireAt.Equal(removedAt.Add(grace)) {
		t.Errorf("RetireAt %v, want the commit time + %v", got.RetireAt, grace)
	}
	for _, eps := range [][]route.EndpointRoute{k.added, k.pruned} {
		if !hasRoute(eps, mark1, "169.111.100.11") || !hasRoute(eps, mark1, "fd00:111::11") || !hasRoute(eps, mark0, "169.111.100.10") {
			t.Fatalf("removed endpoints' routes not kept in their grace period: %v", eps)
		}
	}
	// Just before the end of the grace period: still kept.
	clock.t = removedAt.Add(grace - time.Millisecond)
	if _, err := p.Apply(without(3, gone), nil); err != nil {
		t.Fatal(err)
	}
	if !hasRoute(k.pruned, mark1, "169.111.100.11") || !hasRoute(k.pruned, mark0, "169.111.100.10") {
		t.Fatalf("routes deleted before the grace period ended: %v", k.pruned)
	}
	// At its end: Prune deletes them; slot 0 keeps its mark for IPv6.
	clock.t = removedAt.Add(grace)
	got, err = p.Apply(without(4, gone), nil)
	if err != nil {
		t.Fatal(err)
	}
	if hasRoute(k.pruned, mark1, "169.111.100.11") || hasRoute(k.pruned, mark1, "fd00:111::11") || hasRoute(k.pruned, mark0, "169.111.100.10") {
		t.Errorf("routes kept after the grace period: %v", k.pruned)
	}
	if !hasRoute(k.pruned, mark0, "fd00:111::10") || !got.RetireAt.IsZero() {
		t.Errorf("slot 0's IPv6 route %v, RetireAt %v", k.pruned, got.RetireAt)
	}
	if _, held := p.engine.marks.held[endpointKey{"service-a", 1}]; held {
		t.Errorf("slot 1's mark still held after its routes were pruned")
	}
}

// TestApplyReturningEndpointKeepsItsMark: an endpoint removed and re-added
// within the grace period comes back with its mark, and nothing is pending.
func TestApplyReturningEndpointKeepsItsMark(t *testing.T) {
	p, k, clock := programmer()
	if _, err := p.Apply(withNetwork(testState()), nil); err != nil {
		t.Fatal(err)
	}
	mark := markOf(t, k.added, "169.111.100.11")
	if _, err := p.Apply(without(2, func(e model.Endpoint) bool { return e.ID == 1 }), nil); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(time.Second)
	st := withNetwork(testState())
	st.Generation = 3
	got, err := p.Apply(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := markOf(t, k.added, "169.111.100.11"); m != mark {
		t.Errorf("returning endpoint got mark %#x, want its own %#x", m, mark)
	}
	if len(k.added) != 7 || !got.RetireAt.IsZero() {
		t.Errorf("routes %v, RetireAt %v: nothing should be retiring", k.added, got.RetireAt)
	}
}

// TestApplyNeverReusesMarkInGrace: a removed endpoint's mark is not given
// to another endpoint until Prune has deleted its routes.
func TestApplyNeverReusesMarkInGrace(t *testing.T) {
	p, k, clock := programmer(WithMarks(FirstMark, 8))
	if _, err := p.Apply(withNetwork(testState()), nil); err != nil {
		t.Fatal(err)
	}
	mark1 := markOf(t, k.added, "169.111.100.11")
	// Slot 1 replaced by slots 4..7 at once: 4 remaining slots (service-a's
	// 0, 2, 3 and service-empty's 0), 4 new ones and the held mark make 9,
	// more than the range of 8, unless the held mark were reused.
	st := without(2, func(e model.Endpoint) bool { return e.ID == 1 })
	for id := 4; id < 8; id++ {
		st.Services[0].Endpoints = append(st.Services[0].Endpoints, model.Endpoint{ID: id, Addr: addr(fmt.Sprint("169.111.100.", 20+id)), Ready: true})
	}
	if _, err := p.Apply(st, nil); err == nil {
		t.Fatalf("9 marks from a range of 8: the held mark %#x was reused: %v", mark1, k.added)
	}
	st.Services[0].Endpoints = st.Services[0].Endpoints[:len(st.Services[0].Endpoints)-1] // slots 4..6
	if _, err := p.Apply(st, nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range k.added {
		if e.Mark == mark1 && e.Via != addr("169.111.100.11") && e.Via != addr("fd00:111::11") {
			t.Fatalf("mark %#x of the removed endpoint given to %s in its grace period", mark1, e.Via)
		}
	}
	// After the grace period: the routes are pruned, then the mark is free.
	clock.t = clock.t.Add(time.Hour)
	st.Generation = 3
	if _, err := p.Apply(st, nil); err != nil {
		t.Fatal(err)
	}
	if hasRoute(k.pruned, mark1, "169.111.100.11") {
		t.Fatalf("routes of mark %#x not pruned after the grace period", mark1)
	}
	st.Generation = 4
	st.Services[0].Endpoints = append(st.Services[0].Endpoints, model.Endpoint{ID: 7, Addr: addr("169.111.100.27"), Ready: true})
	if _, err := p.Apply(st, nil); err != nil {
		t.Fatalf("the released mark cannot be used: %v", err)
	}
	if m := markOf(t, k.added, "169.111.100.27"); m != mark1 {
		t.Errorf("new endpoint got %#x; the only free mark is the released %#x", m, mark1)
	}
}
