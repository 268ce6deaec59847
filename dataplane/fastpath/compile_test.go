package fastpath

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables/expr"

	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/model"
)

var (
	vip4 = netip.MustParseAddr("20.0.0.1")
	vip6 = netip.MustParseAddr("2000::1")
)

func testRoute(name, svc string, protos ...model.Protocol) model.Route {
	return model.Route{Name: name, Service: svc, Priority: 1, Protocols: protos,
		Destinations: []netip.Prefix{netip.PrefixFrom(vip4, 32), netip.PrefixFrom(vip6, 128)}}
}

func testService(name string, entries4, entries6 []uint16) Service {
	s := Service{Name: name, IPv4: entries4, IPv6: entries6}
	for id := range 2 {
		s.Endpoints = append(s.Endpoints, Endpoint{ID: id, Mark: 0x10000 + uint32(id),
			IPv4: netip.AddrFrom4([4]byte{169, 111, 100, byte(10 + id)}), IPv6: netip.AddrFrom16([16]byte{0xfd, 15: byte(10 + id)})})
	}
	return s
}

func chainOf(t *testing.T, p *Program, name string) nft.Chain {
	t.Helper()
	i := slices.IndexFunc(p.Table.Chains, func(c nft.Chain) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no chain %q among %v", name, chainNames(p))
	}
	return p.Table.Chains[i]
}

func chainNames(p *Program) []string {
	var out []string
	for _, c := range p.Table.Chains {
		out = append(out, c.Name)
	}
	return out
}

// lastVerdict returns a rule's final verdict: "goto X", "return", "accept".
func lastVerdict(r nft.Rule) string {
	switch v := r.Exprs[len(r.Exprs)-1].(type) {
	case *expr.Verdict:
		switch v.Kind {
		case expr.VerdictGoto:
			return "goto " + v.Chain
		case expr.VerdictReturn:
			return "return"
		case expr.VerdictAccept:
			return "accept"
		}
	case *expr.Lookup:
		return "map " + v.SetName
	}
	return fmt.Sprintf("%T", r.Exprs[len(r.Exprs)-1])
}

func TestCompileDispatchesEveryVIPAndProtocolInPrecedenceOrder(t *testing.T) {
	hi := testRoute("ns/hi", "svc", model.ProtoUDP)
	hi.DestinationPorts = []model.PortRange{{From: 53, To: 53}}
	in := Input{Routes: []model.Route{hi, testRoute("ns/all", "svc", model.ProtoUDP, model.ProtoTCP), testRoute("ns/never", "svc", model.ProtoUDP)},
		Services: []Service{testService("svc", []uint16{0, 1, 1}, []uint16{1, 0, 0})}}
	p := Compile(in)
	var keys []string
	for _, d := range p.Table.Dispatch {
		keys = append(keys, fmt.Sprintf("%v -> %s", d.VIP, d.Chain))
		for _, r := range chainOf(t, p, d.Chain).Rules {
			keys = append(keys, "  "+r.Comment+" "+lastVerdict(r))
		}
	}
	want := []string{"20.0.0.1 -> v4-20.0.0.1", "  tcp goto d4-20.0.0.1-tcp", "  udp goto d4-20.0.0.1-udp", "  echo goto d4-20.0.0.1-echo",
		"2000::1 -> v6-2000::1", "  tcp goto d6-2000::1-tcp", "  udp goto d6-2000::1-udp", "  echo goto d6-2000::1-echo"}
	if !slices.Equal(keys, want) {
		t.Errorf("dispatch %q\nwant     %q", keys, want)
	}
	udp := chainOf(t, p, "d4-20.0.0.1-udp")
	var got []string
	for _, r := range udp.Rules {
		got = append(got, lastVerdict(r))
	}
	// ns/all matches every UDP packet: ns/never after it can never match.
	if want := []string{"goto r4-udp-ns/hi", "goto r4-udp-ns/all"}; !slices.Equal(got, want) {
		t.Errorf("UDP chain %v, want %v", got, want)
	}
	echo := chainOf(t, p, "d6-2000::1-echo")
	if len(echo.Rules) != 2 || lastVerdict(echo.Rules[0]) != "return" || lastVerdict(echo.Rules[1]) != "goto r6-echo-ns/hi" {
		t.Errorf("echo chain: %v", echo.Rules)
	}
	if r := chainOf(t, p, "r4-udp-ns/hi"); len(r.Rules) != 1 || lastVerdict(r.Rules[0]) != "map em4-svc-64" ||
		!slices.ContainsFunc(r.Rules[0].Exprs, func(e expr.Any) bool { l, ok := e.(*expr.Lookup); return ok && l.SetName == "m4-svc-3" }) {
		t.Errorf("route chain %+v", r)
	}
	setOf := func(name string) nft.Set {
		i := slices.IndexFunc(p.Table.Sets, func(s nft.Set) bool { return s.Name == name })
		if i < 0 {
			t.Fatalf("no set %s", name)
		}
		return p.Table.Sets[i]
	}
	if m := setOf("m6-svc-3"); m.Kind != nft.EntryMap || !slices.Equal(m.Marks, []uint32{0x10001, 0x10000, 0x10000}) {
		t.Errorf("map m6-svc-3 = %#x", m.Marks)
	}
	if m := setOf("em6-svc-64"); m.Kind != nft.MarkMap || m.Size != 64 || !maps.Equal(m.Goto, map[uint32]string{0x10000: "e6-svc-0", 0x10001: "e6-svc-1"}) {
		t.Errorf("map em6-svc-64 = %v, size %d", m.Goto, m.Size)
	}
	if e := chainOf(t, p, "e4-svc-1"); !strings.HasPrefix(e.Rules[0].Comment, "endpoint svc 1 mark 0x10001 169.111.100.11") {
		t.Errorf("endpoint chain comment %q", e.Rules[0].Comment)
	}
	if len(p.RouteCounters) != 2 || len(p.EndpointCounters) != 4 || len(p.Table.Counters) != 6 { // ns/never is unreachable
		t.Errorf("counters: routes %v, endpoints %v, objects %v", p.RouteCounters, p.EndpointCounters, p.Table.Counters)
	}
}

// TestCompileLeavesToUserspace: a byte match beyond the payload limit
// returns to userspace at its route's place (lower routes stay behind
// it), and a route whose Service is missing or has no endpoint of the
// family gets an empty route chain (back to prerouting, then queued).
func TestCompileLeavesToUserspace(t *testing.T) {
	far := testRoute("ns/far", "svc", model.ProtoUDP)
	far.Priority = 9
	far.DestinationPorts = []model.PortRange{{From: 9, To: 9}}
	far.ByteMatches = []model.ByteMatch{{Protocol: model.ProtoUDP, Offset: 300, Size: 1, Mask: 0xff, Value: 1}}
	in := Input{Routes: []model.Route{far, testRoute("ns/next", "svc", model.ProtoUDP), testRoute("ns/ghost", "missing", model.ProtoTCP)},
		Services: []Service{testService("svc", []uint16{0}, nil)}}
	p := Compile(in)
	if len(p.Userspace) != 1 || !strings.Contains(p.Userspace[0], "ns/far") {
		t.Errorf("Userspace = %v", p.Userspace)
	}
	udp := chainOf(t, p, "d4-20.0.0.1-udp")
	if len(udp.Rules) != 2 || lastVerdict(udp.Rules[0]) != "return" || lastVerdict(udp.Rules[1]) != "goto r4-udp-ns/next" {
		t.Errorf("UDP chain: %+v", udp.Rules)
	}
	if len(udp.Rules[0].Exprs) < 3 {
		t.Errorf("the unexpressible route's rule lost its port match: %+v", udp.Rules[0].Exprs)
	}
	for _, name := range []string{"r6-udp-ns/next", "r4-tcp-ns/ghost"} {
		if c := chainOf(t, p, name); len(c.Rules) != 0 {
			t.Errorf("%s has rules, want none (no endpoint): %+v", name, c.Rules)
		}
	}
	if p2 := Compile(Input{Routes: in.Routes, Services: in.Services, MaxPayloadOffset: 65535}); len(p2.Userspace) != 0 {
		t.Errorf("with offsets up to 65535: Userspace = %v", p2.Userspace)
	}
}

func TestCompileBoundsNames(t *testing.T) {
	long := testRoute("ns/"+strings.Repeat("x", 300), "svc", model.ProtoUDP)
	long.Sources = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::/8")}
	long.SourcePorts = []model.PortRange{{From: 1, To: 2}, {From: 5, To: 6}}
	p := Compile(Input{Routes: []model.Route{long, testRoute("ns/"+strings.Repeat("x", 301), "svc", model.ProtoUDP)},
		Services: []Service{testService("svc", []uint16{0}, []uint16{0})}})
	seen := map[string]bool{}
	check := func(kind, name string) {
		if len(name) > maxName || seen[kind+name] {
			t.Errorf("%s name of %d bytes (or twice): %q", kind, len(name), name)
		}
		seen[kind+name] = true
	}
	for _, c := range p.Table.Chains {
		check("chain", c.Name)
	}
	for _, s := range p.Table.Sets {
		check("set", s.Name)
	}
	for _, c := range p.Table.Counters {
		check("counter", c)
	}
}

func TestAdoptedMarks(t *testing.T) {
	p := Compile(Input{Routes: []model.Route{testRoute("ns/r", "svc", model.ProtoUDP)},
		Services: []Service{testService("svc", []uint16{0, 1}, []uint16{1})}})
	chains := map[string][]string{"d4-20.0.0.1-udp": {"route ns/r #0123"}, "e4-bad-1": {"endpoint bad 1 mark nonsense #1"}}
	for _, c := range p.Table.Chains {
		if strings.HasPrefix(c.Name, "e") {
			chains[c.Name] = []string{c.Rules[0].Comment + " #abcdef"} // as nft stores it
		}
	}
	want := []Mark{{Service: "svc", ID: 0, Mark: 0x10000}, {Service: "svc", ID: 1, Mark: 0x10001}}
	if got := AdoptedMarks(chains); !slices.Equal(got, want) {
		t.Errorf("AdoptedMarks = %v, want %v", got, want)
	}
	// The two families of a slot disagree: the slot is not adopted.
	chains["e6-svc-0"] = []string{"endpoint svc 0 mark 0x10005 fd00::a #1"}
	if got := AdoptedMarks(chains); !slices.Equal(got, want[1:]) {
		t.Errorf("with a conflict: AdoptedMarks = %v, want %v", got, want[1:])
	}
}

// TestCompileSizesEndpointMapsByTheirFamilysEndpoints: each family's
// endpoint map is sized (and named) for that family's endpoints, so a
// Service that grows past a size gets a new map its route chains use.
func TestCompileSizesEndpointMapsByTheirFamilysEndpoints(t *testing.T) {
	svc := Service{Name: "svc", IPv4: []uint16{0}, IPv6: []uint16{0}}
	for id := range 65 {
		ep := Endpoint{ID: id, Mark: 0x10000 + uint32(id), IPv4: netip.AddrFrom4([4]byte{169, 111, byte(id), 1})}
		if id < 2 {
			ep.IPv6 = netip.AddrFrom16([16]byte{0xfd, 15: byte(10 + id)})
		}
		svc.Endpoints = append(svc.Endpoints, ep)
	}
	p := Compile(Input{Routes: []model.Route{testRoute("ns/all", "svc", model.ProtoUDP)}, Services: []Service{svc}})
	for _, tc := range []struct {
		chain, set string
		size, n    int
	}{{"r4-udp-ns/all", "em4-svc-128", 128, 65}, {"r6-udp-ns/all", "em6-svc-64", 64, 2}} {
		if got := lastVerdict(chainOf(t, p, tc.chain).Rules[0]); got != "map "+tc.set {
			t.Errorf("%s ends in %s, want map %s", tc.chain, got, tc.set)
		}
		i := slices.IndexFunc(p.Table.Sets, func(s nft.Set) bool { return s.Name == tc.set })
		if i < 0 {
			t.Fatalf("no set %s", tc.set)
		}
		if s := p.Table.Sets[i]; int(s.Size) != tc.size || len(s.Goto) != tc.n {
			t.Errorf("%s: size %d with %d endpoints, want %d with %d", tc.set, s.Size, len(s.Goto), tc.size, tc.n)
		}
	}
}
