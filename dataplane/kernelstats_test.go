package dataplane

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/model"
)

// kernelStatsFixture is an engine with one route and one endpoint, a
// Programmer whose kernel path programmed them, and a fake counter reader.
func kernelStatsFixture(t *testing.T) (*KernelStats, *map[string]nft.Count, *error) {
	t.Helper()
	p, _, _ := programmer()
	p.kernel = &kernelPath{maxPayloadOffset: 255}
	st := withNetwork(&model.State{Generation: 1,
		Services: []model.Service{{Name: "svc", MaxEndpoints: 2, Endpoints: []model.Endpoint{{ID: 0, Ready: true, Addr: netip.MustParseAddr("169.111.100.11")}}}},
		Routes: []model.Route{{Name: "ns/r", Service: "svc", Priority: 1, Destinations: []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32")},
			Protocols: []model.Protocol{model.ProtoUDP}}}})
	if _, err := p.Apply(st, nil); err != nil {
		t.Fatal(err)
	}
	counts := map[string]nft.Count{}
	var readErr error
	ks := NewKernelStats(p.engine, p, func() (map[string]nft.Count, error) { return counts, readErr })
	return ks, &counts, &readErr
}

func TestKernelStatsAddTheKernelsCounts(t *testing.T) {
	ks, counts, readErr := kernelStatsFixture(t)
	prog := ks.prog.kernelProgram()
	var routeObj, epObj string
	for name := range prog.RouteCounters {
		routeObj = name
	}
	for name := range prog.EndpointCounters {
		epObj = name
	}
	read := func() (route, ep Count, balanced uint64) {
		ks.EachRoute(func(_, _ string, c Count) { route = c })
		ks.EachEndpoint(func(_ string, _ int, _ string, c Count) { ep = c })
		balanced, _ = ks.ReasonCount(ReasonBalanced)
		return route, ep, balanced
	}
	(*counts)[routeObj], (*counts)[epObj] = nft.Count{Packets: 5, Bytes: 500}, nft.Count{Packets: 5, Bytes: 500}
	if r, e, b := read(); r.Packets != 5 || e.Packets != 5 || b != 5 {
		t.Fatalf("route %+v, endpoint %+v, balanced %d; want 5 packets each", r, e, b)
	}
	// The objects were created again (their route left and came back):
	// the counts go on from where they were.
	(*counts)[routeObj], (*counts)[epObj] = nft.Count{Packets: 2, Bytes: 200}, nft.Count{Packets: 2, Bytes: 200}
	if r, e, b := read(); r.Packets != 7 || e.Packets != 7 || b != 7 || r.Bytes != 700 {
		t.Fatalf("after a new counter object: route %+v, endpoint %+v, balanced %d; want 7 packets", r, e, b)
	}
	// A failed read keeps the last counts and is counted: read makes three
	// (route, endpoint, balanced), each fails.
	*readErr = errors.New("boom")
	(*counts)[routeObj] = nft.Count{Packets: 100}
	if r, _, _ := read(); r.Packets != 7 || ks.ReadFailures() != 3 {
		t.Fatalf("after a failed read: route %+v, %d failures; want 7 packets, 3 failures", r, ks.ReadFailures())
	}
}

// TestKernelStatsCountsByName: RouteCount and EndpointCount report the
// kernel's counts under the labels the metrics use (what sllbrd show adds).
func TestKernelStatsCountsByName(t *testing.T) {
	ks, counts, _ := kernelStatsFixture(t)
	prog := ks.prog.kernelProgram()
	for name := range prog.RouteCounters {
		(*counts)[name] = nft.Count{Packets: 3, Bytes: 300}
	}
	for name := range prog.EndpointCounters {
		(*counts)[name] = nft.Count{Packets: 2, Bytes: 200}
	}
	if c := ks.RouteCount("ns/r", "svc"); c.Packets != 3 || c.Bytes != 300 {
		t.Errorf("RouteCount(ns/r, svc) = %+v, want 3 packets, 300 bytes", c)
	}
	if c := ks.EndpointCount("svc", 0, "169.111.100.11"); c.Packets != 2 || c.Bytes != 200 {
		t.Errorf("EndpointCount(svc, 0, 169.111.100.11) = %+v, want 2 packets, 200 bytes", c)
	}
	if c := ks.RouteCount("ns/other", "svc"); c != (Count{}) {
		t.Errorf("RouteCount of an unknown route = %+v, want zero", c)
	}
}

// TestKernelStatsReadAfterWrite: a read counts every packet the kernel
// counted before it, however soon after the previous read (a scrape right
// after a burst of traffic used to get the counts of a read a few
// milliseconds earlier).
func TestKernelStatsReadAfterWrite(t *testing.T) {
	ks, counts, _ := kernelStatsFixture(t)
	prog := ks.prog.kernelProgram()
	set := func(n uint64) {
		for name := range prog.RouteCounters {
			(*counts)[name] = nft.Count{Packets: n, Bytes: 100 * n}
		}
		for name := range prog.EndpointCounters {
			(*counts)[name] = nft.Count{Packets: n, Bytes: 100 * n}
		}
	}
	set(40)
	if p, _ := ks.ReasonCount(ReasonBalanced); p != 40 {
		t.Fatalf("balanced %d, want 40", p)
	}
	set(80) // the kernel counts 40 more packets at once
	if p, _ := ks.ReasonCount(ReasonBalanced); p != 80 {
		t.Errorf("balanced right after 40 more packets: %d, want 80", p)
	}
	if c := ks.RouteCount("ns/r", "svc"); c.Packets != 80 {
		t.Errorf("route: %d packets, want 80", c.Packets)
	}
}
