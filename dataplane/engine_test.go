package dataplane

import (
	"net/netip"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
	"github.com/sllbrd/sllbrd/model"
)

var (
	vip4, vip6 = netip.MustParseAddr("20.0.0.1"), netip.MustParseAddr("2001:db8::1")
	router4    = netip.MustParseAddr("192.0.2.254")
	router6    = netip.MustParseAddr("2001:db8:ff::fe")
)

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// state: service-a (dual-stack 0 and 1, IPv4-only 2, IPv6-only 3) behind
// TCP/UDP/SCTP routes on both VIPs; service-empty has no ready endpoint.
func testState() *model.State {
	return &model.State{
		Generation: 1,
		Routes: []model.Route{
			{Name: "ns/all", Service: "service-a", Priority: 1,
				Destinations: []netip.Prefix{netip.PrefixFrom(vip4, 32), netip.PrefixFrom(vip6, 128)},
				Protocols:    []model.Protocol{model.ProtoTCP, model.ProtoUDP, model.ProtoSCTP}},
			{Name: "ns/empty", Service: "service-empty", Priority: 5,
				Destinations:     []netip.Prefix{netip.PrefixFrom(vip4, 32), netip.PrefixFrom(vip6, 128)},
				Protocols:        []model.Protocol{model.ProtoUDP},
				DestinationPorts: []model.PortRange{{From: 7000, To: 7000}}},
		},
		Services: []model.Service{
			{Name: "service-a", MaxEndpoints: 8, SCTPHashPorts: true, Endpoints: []model.Endpoint{
				{ID: 0, Addr: addr("169.111.100.10"), Ready: true}, {ID: 0, Addr: addr("fd00:111::10"), Ready: true},
				{ID: 1, Addr: addr("169.111.100.11"), Ready: true}, {ID: 1, Addr: addr("fd00:111::11"), Ready: true},
				{ID: 2, Addr: addr("169.111.100.12"), Ready: true},
				{ID: 3, Addr: addr("fd00:111::13"), Ready: true},
			}},
			{Name: "service-empty", MaxEndpoints: 4, Endpoints: []model.Endpoint{{ID: 0, Addr: addr("169.111.100.20"), Ready: false}}},
		},
	}
}

func newTestEngine(t testing.TB, st *model.State) (*Engine, *Plan) {
	t.Helper()
	e := NewEngine()
	p, err := e.Build(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Problems) != 0 {
		t.Fatalf("problems: %v", p.Problems)
	}
	e.Commit(p)
	return e, p
}

// endpointOf maps a mark back to the endpoint addresses of the plan.
func endpointOf(p *Plan, mark uint32, is4 bool) netip.Addr {
	for _, ep := range p.Endpoints {
		if ep.Mark == mark && ep.Addr.Is4() == is4 {
			return ep.Addr
		}
	}
	return netip.Addr{}
}

func decide(e *Engine, b []byte) Decision {
	d := NewDecision()
	e.Decide(b, len(b), 1, d)
	return *d
}

func flow(src, dst netip.Addr, proto uint8, sport, dport uint16) testpkt.Flow {
	return testpkt.Flow{Src: src, Dst: dst, Proto: proto, SrcPort: sport, DstPort: dport}
}

func TestDropsEverythingBeforeFirstCommit(t *testing.T) {
	e := NewEngine()
	b := testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, 1000, 80), nil, testpkt.Options{})
	if d := decide(e, b); d.Verdict != Drop || d.Reason != ReasonNotConfigured {
		t.Fatalf("got %v/%v, want drop/not_configured", d.Verdict, d.Reason)
	}
}

func TestReasons(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	c4 := addr("10.0.0.1")
	tcp := testpkt.Packet(flow(c4, vip4, 6, 1000, 80), nil, testpkt.Options{})
	for _, tc := range []struct {
		name    string
		b       []byte
		verdict Verdict
		reason  Reason
	}{
		{"balanced", tcp, Accept, ReasonBalanced},
		{"no route: other VIP", testpkt.Packet(flow(c4, addr("20.0.0.99"), 6, 1000, 80), nil, testpkt.Options{}), Drop, ReasonNoRoute},
		{"no endpoint ready", testpkt.Packet(flow(c4, vip4, 17, 1000, 7000), nil, testpkt.Options{}), Drop, ReasonNoEndpoint},
		{"undecodable", tcp[:10], Drop, ReasonUndecodable},
		{"unsupported protocol", func() []byte { b := append([]byte(nil), tcp...); b[9] = 47; return b }(), Drop, ReasonUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := e.ReasonCount(tc.reason)
			d := decide(e, tc.b)
			if d.Verdict != tc.verdict || d.Reason != tc.reason {
				t.Fatalf("got %v/%v, want %v/%v", d.Verdict, d.Reason, tc.verdict, tc.reason)
			}
			if after, _ := e.ReasonCount(tc.reason); after != before+1 {
				t.Errorf("reason counter %d -> %d, want +1", before, after)
			}
		})
	}
}

func TestFlowsStickAndSpread(t *testing.T) {
	e, plan := newTestEngine(t, testState())
	for _, tc := range []struct {
		client, vip netip.Addr
		want        int // endpoints of that family
	}{{addr("10.0.0.1"), vip4, 3}, {addr("fd00::1"), vip6, 3}} {
		seen := map[netip.Addr]int{}
		for port := uint16(1000); port < 4000; port++ {
			b := testpkt.Packet(flow(tc.client, tc.vip, 17, port, 5000), nil, testpkt.Options{})
			d1, d2 := decide(e, b), decide(e, b)
			if d1.Verdict != Accept || d1.Mark != d2.Mark {
				t.Fatalf("flow %d: %v mark %d then %d", port, d1.Verdict, d1.Mark, d2.Mark)
			}
			ep := endpointOf(plan, d1.Mark, tc.vip.Is4())
			if !ep.IsValid() {
				t.Fatalf("%v flow sent to mark %d, which has no %v endpoint", tc.vip, d1.Mark, tc.vip)
			}
			seen[ep]++
		}
		if len(seen) != tc.want {
			t.Errorf("%v flows reached %d endpoints, want %d: %v", tc.vip, len(seen), tc.want, seen)
		}
		for ep, n := range seen {
			if n < 3000/tc.want*8/10 { // within 20% of an even share
				t.Errorf("%v got %d of 3000 flows", ep, n)
			}
		}
	}
}

func TestICMPErrorReachesTheFlowsEndpoint(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	for _, tc := range []struct {
		client, vip, router netip.Addr
		typ, code           uint8
	}{
		{addr("10.0.0.7"), vip4, router4, testpkt.ICMPv4Unreachable, testpkt.ICMPv4FragNeeded},
		{addr("10.0.0.7"), vip4, router4, testpkt.ICMPv4TimeExceeded, 0},
		{addr("fd00::7"), vip6, router6, testpkt.ICMPv6PacketTooBig, 0},
		{addr("fd00::7"), vip6, router6, testpkt.ICMPv6Unreachable, 4},
	} {
		for port := uint16(2000); port < 2050; port++ {
			in := flow(tc.client, tc.vip, 6, port, 443)
			fwd := decide(e, testpkt.Packet(in, nil, testpkt.Options{}))
			// The target's reply hit a hop whose error comes back to the VIP.
			reply := testpkt.Packet(in.Reverse(), make([]byte, 1400), testpkt.Options{})
			d := decide(e, testpkt.ICMPError(tc.router, reply, tc.typ, tc.code, 1280))
			if d.Verdict != Accept || d.Mark != fwd.Mark {
				t.Fatalf("%v type %d: error got %v mark %d, flow has mark %d", tc.vip, tc.typ, d.Verdict, d.Mark, fwd.Mark)
			}
		}
	}
}

func TestLaterFragmentsFollowFirst(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	for _, c := range []netip.Addr{addr("10.0.0.9"), addr("fd00::9")} {
		vip := vip4
		if c.Is6() {
			vip = vip6
		}
		for id := uint32(1); id <= 50; id++ {
			frags := testpkt.Fragments(flow(c, vip, 17, uint16(3000+id), 5000), make([]byte, 3000), 1200, id)
			first := decide(e, frags[0])
			for _, f := range frags[1:] {
				if d := decide(e, f); d.Verdict != Accept || d.Mark != first.Mark || d.Reason != ReasonFragmentFollowed {
					t.Fatalf("later fragment: %v mark %d reason %v, first had mark %d", d.Verdict, d.Mark, d.Reason, first.Mark)
				}
			}
		}
	}
}

func TestEarlyFragmentsAreHeldAndReleased(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	frags := testpkt.Fragments(flow(addr("10.0.0.9"), vip4, 17, 3333, 5000), make([]byte, 3000), 1200, 99)
	d := NewDecision()
	for i, f := range frags[1:] {
		e.Decide(f, len(f), uint64(100+i), d)
		if d.Verdict != Hold || d.Reason != ReasonFragmentHeld {
			t.Fatalf("early fragment: %v/%v, want hold", d.Verdict, d.Reason)
		}
	}
	e.Decide(frags[0], len(frags[0]), 7, d)
	if d.Verdict != Accept || len(d.Tokens.Release) != 2 || d.Tokens.Release[0] != 100 || d.Tokens.Release[1] != 101 {
		t.Fatalf("first fragment: %v, release %v, want accept releasing [100 101]", d.Verdict, d.Tokens.Release)
	}
}

func TestMarksAndCountersSurviveReload(t *testing.T) {
	st := testState()
	e, p1 := newTestEngine(t, st)
	b := testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, 1000, 80), nil, testpkt.Options{})
	decide(e, b)
	// Remove endpoint 1 and add 5: the others keep their marks.
	next := testState()
	next.Generation = 2
	svc := &next.Services[0]
	svc.Endpoints = append(svc.Endpoints[:2], append(svc.Endpoints[4:], model.Endpoint{ID: 5, Addr: addr("169.111.100.15"), Ready: true})...)
	p2, err := e.Build(next)
	if err != nil || len(p2.Problems) != 0 {
		t.Fatal(err, p2.Problems)
	}
	e.Commit(p2)
	old := map[endpointKey]uint32{}
	for _, ep := range p1.Endpoints {
		old[endpointKey{ep.Service, ep.ID}] = ep.Mark
	}
	for _, ep := range p2.Endpoints {
		if m, ok := old[endpointKey{ep.Service, ep.ID}]; ok && m != ep.Mark {
			t.Errorf("endpoint %d changed mark %d -> %d", ep.ID, m, ep.Mark)
		}
		if ep.ID == 5 && ep.Mark == old[endpointKey{"service-a", 1}] {
			t.Errorf("new endpoint took the mark %d of a removed one in the same reload", ep.Mark)
		}
	}
	if e.Generation() != 2 {
		t.Errorf("generation %d, want 2", e.Generation())
	}
	decide(e, b)
	var routePackets uint64
	e.EachRoute(func(route, _ string, c Count) {
		if route == "ns/all" {
			routePackets = c.Packets
		}
	})
	if routePackets != 2 {
		t.Errorf("route counter = %d after reload, want 2", routePackets)
	}
}

func TestTwoInstancesAgree(t *testing.T) {
	e1, p1 := newTestEngine(t, testState())
	// The second instance saw another history first: its marks differ.
	e2 := NewEngine()
	warm := testState()
	warm.Services[0].Endpoints = warm.Services[0].Endpoints[4:]
	if p, err := e2.Build(warm); err == nil {
		e2.Commit(p)
	}
	p2, err := e2.Build(testState())
	if err != nil {
		t.Fatal(err)
	}
	e2.Commit(p2)
	for port := uint16(1); port < 2000; port++ {
		for _, f := range []testpkt.Flow{flow(addr("10.1.2.3"), vip4, 6, port, 80), flow(addr("fd00::3"), vip6, 132, port, 36412)} {
			b := testpkt.Packet(f, nil, testpkt.Options{})
			d1, d2 := decide(e1, b), decide(e2, b)
			if a, b := endpointOf(p1, d1.Mark, f.Src.Is4()), endpointOf(p2, d2.Mark, f.Src.Is4()); a != b || !a.IsValid() {
				t.Fatalf("flow %v: instance 1 -> %v, instance 2 -> %v", f, a, b)
			}
		}
	}
}

func TestSCTPHashesOnPortsOnly(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	a := decide(e, testpkt.Packet(flow(addr("10.0.0.1"), vip4, 132, 5000, 36412), nil, testpkt.Options{}))
	for i := range 50 {
		c := netip.AddrFrom4([4]byte{10, 9, 8, byte(i)})
		if b := decide(e, testpkt.Packet(flow(c, vip4, 132, 5000, 36412), nil, testpkt.Options{})); b.Mark != a.Mark {
			t.Fatalf("SCTP from %v: mark %d, from 10.0.0.1: %d", c, b.Mark, a.Mark)
		}
	}
}

func TestInvalidEndpointsAreReportedAndSkipped(t *testing.T) {
	st := testState()
	svc := &st.Services[0]
	svc.Endpoints = append(svc.Endpoints,
		model.Endpoint{ID: 9, Addr: addr("169.111.100.99"), Ready: true}, // out of range
		model.Endpoint{ID: 2, Addr: addr("169.111.100.98"), Ready: true}, // duplicate IPv4 id
		model.Endpoint{ID: 4, Ready: true})                               // no address
	st.Routes = append(st.Routes, model.Route{Name: "ns/ghost", Service: "nope", Priority: 1,
		Destinations: []netip.Prefix{netip.MustParsePrefix("20.0.0.5/32")}, Protocols: []model.Protocol{model.ProtoTCP}})
	e := NewEngine()
	p, err := e.Build(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Problems) != 4 {
		t.Fatalf("problems = %d, want 4: %v", len(p.Problems), p.Problems)
	}
	e.Commit(p)
	if d := decide(e, testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, 1, 80), nil, testpkt.Options{})); d.Verdict != Accept {
		t.Errorf("good route broken by bad endpoints: %v", d.Reason)
	}
	if d := decide(e, testpkt.Packet(flow(addr("10.0.0.1"), addr("20.0.0.5"), 6, 1, 80), nil, testpkt.Options{})); d.Reason != ReasonNoEndpoint {
		t.Errorf("route to a missing Service: %v, want no_endpoint", d.Reason)
	}
}

func TestDecideAllocatesNothing(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	frags := testpkt.Fragments(flow(addr("10.0.0.9"), vip4, 17, 3333, 5000), make([]byte, 3000), 1200, 5)
	reply := testpkt.Packet(flow(vip6, addr("fd00::7"), 6, 443, 999), make([]byte, 1400), testpkt.Options{})
	pkts := [][]byte{
		testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, 1000, 80), nil, testpkt.Options{IPv4Options: true}),
		testpkt.Packet(flow(addr("fd00::1"), vip6, 132, 1000, 80), nil, testpkt.Options{IPv6Ext: true}),
		testpkt.ICMPError(router6, reply, testpkt.ICMPv6PacketTooBig, 0, 1280),
		testpkt.Echo(addr("10.0.0.1"), vip4, 1, 1),
		frags[1], frags[0], frags[1], frags[2],
		{0x45, 0},
	}
	d := NewDecision()
	allocs := testing.AllocsPerRun(200, func() {
		for i, b := range pkts {
			e.Decide(b, len(b), uint64(i), d)
		}
	})
	if allocs != 0 {
		t.Fatalf("Decide allocates %v times per run of %d packets", allocs, len(pkts))
	}
}
