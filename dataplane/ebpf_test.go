package dataplane

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jsimonetti/rtnetlink/v2"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/dataplane/bpfpath"
	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/model"
)

// fakeBPF is the eBPF datapath's fake: it records its calls in the
// kernel fake's call list, with the engine generation visible then.
type fakeBPF struct {
	k            *fakeKernel
	in           fastpath.Input
	hops         []route.EndpointRoute
	attached     []string
	configureErr error
	counts       bpfpath.Counts
	countsErr    error
}

func (b *fakeBPF) Configure(in fastpath.Input) ([]string, error) {
	b.k.calls = append(b.k.calls, fmt.Sprint("bpf-configure@", b.k.engine.Generation()))
	if b.configureErr != nil {
		return nil, b.configureErr
	}
	b.in = in
	return []string{"route x: punted"}, nil
}

func (b *fakeBPF) SetNextHops(eps []route.EndpointRoute) error {
	b.k.calls = append(b.k.calls, "bpf-nexthops")
	b.hops = eps
	return nil
}

func (b *fakeBPF) AttachTo(ifnames []string) error {
	b.k.calls = append(b.k.calls, fmt.Sprint("bpf-attach", ifnames))
	b.attached = ifnames
	return nil
}

func (b *fakeBPF) Counters() (bpfpath.Counts, error) { return b.counts, b.countsErr }

func bpfProgrammer() (*Programmer, *fakeKernel, *fakeBPF, *fakeClock) {
	p, k, clock := programmer()
	b := &fakeBPF{k: k}
	WithBPFPath(b, 255)(p)
	return p, k, b, clock
}

func withRouters(st *model.State, ifaces ...string) *model.State {
	for i, ifc := range ifaces {
		st.Routers = append(st.Routers, model.Router{Name: fmt.Sprint("ns/r", i), Address: netip.MustParseAddr(fmt.Sprint("169.254.100.", 150+i)), Interface: ifc})
	}
	return st
}

// TestApplyProgramsTheBPFPathAfterTheRules: the program is configured
// after the nftables transaction took the plan (what it punts finds the
// rules), with the kernel path's very input, next hops first (a decision
// never names a mark without its next hop), attached to the routers'
// interfaces each once, and before stale routes are pruned.
func TestApplyProgramsTheBPFPathAfterTheRules(t *testing.T) {
	p, k, b, _ := bpfProgrammer()
	applied, err := p.Apply(withRouters(withNetwork(testState()), "vlan-200", "vlan-100", "vlan-100", ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"routes-add@0", "rules@1", "bpf-nexthops", "bpf-configure@1", "bpf-attach[vlan-100 vlan-200]", "routes-prune@1"}
	if !slices.Equal(k.calls, want) {
		t.Fatalf("calls %v, want %v", k.calls, want)
	}
	if !slices.Equal(b.hops, k.added) || len(b.hops) != 7 {
		t.Errorf("next hops %+v, want the endpoint routes %+v", b.hops, k.added)
	}
	if want := p.kernelProgram(); want == nil || len(b.in.Services) != 2 || len(b.in.Routes) != 2 || b.in.MaxPayloadOffset != 255 {
		t.Errorf("configured with %+v", b.in)
	}
	if !slices.Equal(applied.BPFPunted, []string{"route x: punted"}) {
		t.Errorf("BPFPunted %q", applied.BPFPunted)
	}
	k.calls = nil
	if err := p.Cleanup(); err != nil || !slices.Equal(k.calls, []string{"bpf-attach[]", "rules-cleanup", "routes-cleanup"}) {
		t.Errorf("Cleanup: %v, calls %v", err, k.calls)
	}
}

// TestApplyKeepsRoutesWhileTheBPFPathFails: a removed endpoint's mark may
// still be in the program's tables when configuring it failed: its route
// must stay, and the failure is returned.
func TestApplyKeepsRoutesWhileTheBPFPathFails(t *testing.T) {
	p, k, b, clock := bpfProgrammer()
	if _, err := p.Apply(withRouters(withNetwork(testState()), "vlan-100"), nil); err != nil {
		t.Fatal(err)
	}
	gone := markOf(t, k.added, "169.111.100.12")
	removed := func(e model.Endpoint) bool { return e.Addr == addr("169.111.100.12") }
	if _, err := p.Apply(withRouters(without(2, removed), "vlan-100"), nil); err != nil {
		t.Fatal(err)
	}
	// Past the grace period, the program fails to take the plan.
	clock.t = clock.t.Add(2*time.Second + VerdictMargin)
	b.configureErr = errors.New("boom")
	k.calls = nil
	if _, err := p.Apply(withRouters(without(3, removed), "vlan-100"), nil); !errors.Is(err, b.configureErr) {
		t.Fatalf("Apply: %v, want the configure error", err)
	}
	if slices.ContainsFunc(k.calls, func(c string) bool { return strings.HasPrefix(c, "routes-prune") }) {
		t.Errorf("calls %v: stale routes pruned while the program may still use their marks", k.calls)
	}
	// Once the program takes the plan, the route goes.
	b.configureErr = nil
	if _, err := p.Apply(withRouters(without(4, removed), "vlan-100"), nil); err != nil {
		t.Fatal(err)
	}
	if hasRoute(k.pruned, gone, "169.111.100.12") {
		t.Errorf("the route of mark %#x survived the apply that programmed the program", gone)
	}
}

// TestKernelStatsAddTheBPFPathsCounts: the program's counts add to the
// kernel path's under the same labels, and to the balanced reason.
func TestKernelStatsAddTheBPFPathsCounts(t *testing.T) {
	p, _, b, _ := bpfProgrammer()
	st := &model.State{Generation: 1,
		Services: []model.Service{{Name: "svc", MaxEndpoints: 2, Endpoints: []model.Endpoint{{ID: 0, Ready: true, Addr: netip.MustParseAddr("169.111.100.11")}}}},
		Routes: []model.Route{{Name: "ns/r", Service: "svc", Priority: 1, Destinations: []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32")},
			Protocols: []model.Protocol{model.ProtoUDP}}}}
	if _, err := p.Apply(withNetwork(st), nil); err != nil {
		t.Fatal(err)
	}
	var routeObj, epObj string
	for name := range p.kernelProgram().RouteCounters {
		routeObj = name
	}
	for name := range p.kernelProgram().EndpointCounters {
		epObj = name
	}
	counts := map[string]nft.Count{routeObj: {Packets: 5, Bytes: 500}, epObj: {Packets: 5, Bytes: 500}}
	ks := NewKernelStats(p.engine, p, func() (map[string]nft.Count, error) { return counts, nil })
	ep := fastpath.EndpointLabels{Service: "svc", ID: 0, Addr: netip.MustParseAddr("169.111.100.11")}
	b.counts = bpfpath.Counts{Routes: map[fastpath.RouteLabels]bpfpath.Count{{Route: "ns/r", Service: "svc"}: {Packets: 3, Bytes: 300}},
		Endpoints: map[fastpath.EndpointLabels]bpfpath.Count{ep: {Packets: 3, Bytes: 300}}}
	b.counts.Actions[bpfpath.ActionRedirect] = bpfpath.Count{Packets: 3, Bytes: 300}
	if c := ks.RouteCount("ns/r", "svc"); c.Packets != 8 || c.Bytes != 800 {
		t.Errorf("route %+v, want 8 packets, 800 bytes", c)
	}
	if c := ks.EndpointCount("svc", 0, "169.111.100.11"); c.Packets != 8 {
		t.Errorf("endpoint %+v, want 8 packets", c)
	}
	if n, _ := ks.ReasonCount(ReasonBalanced); n != 8 {
		t.Errorf("balanced %d, want 8", n)
	}
	var redirected Count
	ks.EachBPFAction(func(a bpfpath.Action, c Count) {
		if a == bpfpath.ActionRedirect {
			redirected = c
		}
	})
	if redirected.Packets != 3 {
		t.Errorf("redirect action %+v, want 3 packets", redirected)
	}
	// A failed read of the program's counters keeps its last counts and
	// is counted.
	b.countsErr = errors.New("boom")
	b.counts.Routes[fastpath.RouteLabels{Route: "ns/r", Service: "svc"}] = bpfpath.Count{Packets: 100}
	if c := ks.RouteCount("ns/r", "svc"); c.Packets != 8 || ks.ReadFailures() != 1 {
		t.Errorf("after a failed read: route %+v, %d failures; want 8 packets, 1 failure", c, ks.ReadFailures())
	}
}

// TestUsableNeighbours: only the entries the kernel itself sends to give
// the XDP program a MAC.
func TestUsableNeighbours(t *testing.T) {
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	entry := func(index uint32, ip string, state uint16, ll net.HardwareAddr) rtnetlink.NeighMessage {
		return rtnetlink.NeighMessage{Index: index, State: state, Attributes: &rtnetlink.NeighAttributes{Address: net.ParseIP(ip), LLAddress: ll}}
	}
	got := usableNeighbours([]rtnetlink.NeighMessage{
		entry(3, "169.111.100.11", unix.NUD_REACHABLE, mac),
		entry(3, "169.111.100.12", unix.NUD_STALE, mac),
		entry(3, "fd00:111::11", unix.NUD_DELAY, mac),
		entry(4, "169.111.100.11", unix.NUD_PERMANENT, mac),
		entry(3, "169.111.100.13", unix.NUD_INCOMPLETE, nil),
		entry(3, "169.111.100.14", unix.NUD_FAILED, mac),
		entry(3, "169.111.100.15", unix.NUD_REACHABLE, net.HardwareAddr{1, 2}), // not Ethernet
		{Index: 3, State: unix.NUD_REACHABLE},                                  // no attributes
	})
	want := []NeighbourKey{{3, addr("169.111.100.11")}, {3, addr("169.111.100.12")}, {3, addr("fd00:111::11")}, {4, addr("169.111.100.11")}}
	if len(got) != len(want) {
		t.Fatalf("usable %v, want %v", got, want)
	}
	for _, k := range want {
		if !slices.Equal(got[k], mac) {
			t.Errorf("%v: %v, want %v", k, got[k], mac)
		}
	}
}
