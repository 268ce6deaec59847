package dataplane

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/model"
)

// fakeKernel records calls and the engine generation visible at each.
type fakeKernel struct {
	engine    *Engine
	calls     []string
	endpoints []route.EndpointRoute
	paths     []route.ReturnPath
	cfg       nft.Config
	routeErr  error
}

func (k *fakeKernel) Reconcile(eps []route.EndpointRoute, paths []route.ReturnPath) error {
	k.calls = append(k.calls, "routes@"+itoa(k.engine.Generation()))
	k.endpoints, k.paths = eps, paths
	return k.routeErr
}

func (k *fakeKernel) Program(c nft.Config) error {
	k.calls = append(k.calls, "rules@"+itoa(k.engine.Generation()))
	k.cfg = c
	return nil
}

func (k *fakeKernel) Cleanup() error { k.calls = append(k.calls, "cleanup"); return nil }

func itoa(v uint64) string { return string(rune('0' + v)) }

func programmer() (*Programmer, *fakeKernel) {
	e := NewEngine()
	k := &fakeKernel{engine: e}
	return NewProgrammer(e, k, k, nft.QueueRange{First: 0, Count: 2}, false, ReturnTable), k
}

func withNetwork(st *model.State) *model.State {
	st.Gateway = model.Gateway{Namespace: "ns", Name: "sllb-a", Networks: []model.Network{{Name: "nad", Interface: "net1"}}}
	return st
}

func TestApplyOrdersKernelChanges(t *testing.T) {
	p, k := programmer()
	gw := []route.Nexthop{{Addr: netip.MustParseAddr("169.254.100.150"), Interface: "vlan-100"}}
	got, err := p.Apply(withNetwork(testState()), gw)
	if err != nil {
		t.Fatal(err)
	}
	// Routes are programmed while the old (no) configuration is live; the
	// plan is committed before the VIPs start being queued.
	if want := []string{"routes@0", "rules@1"}; !slices.Equal(k.calls, want) {
		t.Fatalf("calls %v, want %v", k.calls, want)
	}
	if len(k.endpoints) != 7 || k.endpoints[0].Interface != "net1" || k.endpoints[0].Table != k.endpoints[0].Mark {
		t.Errorf("endpoint routes = %+v", k.endpoints)
	}
	if p := k.paths[0]; p.Table != ReturnTable || len(p.VIPs) != 2 || len(p.Gateways) != 1 {
		t.Errorf("return path = %+v", p)
	}
	if len(k.cfg.VIPs) != 2 || k.cfg.Queues.Count != 2 {
		t.Errorf("nft config = %+v", k.cfg)
	}
	if len(got.ServedVIPs) != 2 || got.Generation != 1 {
		t.Errorf("applied = %+v", got)
	}
}

func TestApplyServesOnlyVIPsWithReadyEndpoints(t *testing.T) {
	p, _ := programmer()
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
	p, k := programmer()
	k.routeErr = errors.New("netlink: no such device")
	got, err := p.Apply(withNetwork(testState()), nil)
	if err == nil || got.Generation != 1 {
		t.Fatalf("err %v, applied %+v: a failed apply must be reported", err, got)
	}
	if !slices.Equal(k.calls, []string{"routes@0", "rules@1"}) {
		t.Errorf("a route failure stopped the other steps: %v", k.calls)
	}
	if p.engine.Generation() != 1 {
		t.Errorf("plan not committed after a partial route failure")
	}
}

func TestApplyWithoutNetworkReportsProblem(t *testing.T) {
	p, k := programmer()
	got, err := p.Apply(testState(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.endpoints) != 0 || len(got.Problems) != 1 {
		t.Fatalf("endpoints %v problems %v", k.endpoints, got.Problems)
	}
}
