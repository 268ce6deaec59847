package classify

import (
	"math/rand/v2"
	"net/netip"
	"strconv"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/model"
)

// TestLookupAgreesWithScan compares the index with the plain priority scan
// on random overlapping routes and packets.
func TestLookupAgreesWithScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	matched, total := 0, 0
	for round := range 200 {
		routes := randomRoutes(1+rng.IntN(12), rng)
		table, errs := Compile(routes)
		if len(errs) > 0 {
			t.Fatalf("round %d: Compile: %v", round, errs)
		}
		compiled := table.Routes()
		for range 200 {
			p := randomPacket(rng)
			got, ok := table.Lookup(p)
			if !ok {
				got = -1
			}
			total++
			if got >= 0 {
				matched++
			}
			if want := refLookup(compiled, p); got != want {
				t.Fatalf("round %d: Lookup(%+v) = %d, scan says %d\nroutes: %+v", round, *p, got, want, compiled)
			}
		}
	}
	if matched < total/10 || matched > total*9/10 {
		t.Fatalf("%d of %d random packets matched: the generator does not exercise both outcomes", matched, total)
	}
}

// TestNestedPortRangesFallBack builds enough nested destination-port ranges
// on one VIP to exceed maxIntervalEntries, and checks that the key falls
// back to checking ports route by route with the same results.
func TestNestedPortRangesFallBack(t *testing.T) {
	const n = 800 // n*n/2 references > maxIntervalEntries
	routes := make([]model.Route, n)
	for i := range routes {
		routes[i] = route("r"+strconv.Itoa(i), int32(1+i), vip+"/32", dports(ports(uint16(i*10), uint16(65535-i*10))))
	}
	table, errs := Compile(routes)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	block, _ := table.keys.find(keyOf(netip.MustParseAddr(vip), model.ProtoTCP))
	if cands, checkDstPort := candidates(table.arena, block, 0); !checkDstPort || len(cands) != n || len(table.arena) > 3*n {
		t.Fatalf("no fallback: checkDstPort %v, %d candidates, arena of %d words", checkDstPort, len(cands), len(table.arena))
	}
	compiled := table.Routes()
	for port := 0; port < 65536; port += 7 {
		p := flow(tcp, "1.1.1.1", 1, vip, uint16(port))
		got, ok := table.Lookup(p)
		if !ok {
			got = -1
		}
		if want := refLookup(compiled, p); got != want {
			t.Fatalf("port %d: Lookup = %d, scan says %d", port, got, want)
		}
	}
}

func TestRealisticPacketsAllMatch(t *testing.T) {
	for _, n := range []int{1, 100, 10000} {
		routes := realisticRoutes(n)
		table, errs := Compile(routes)
		if len(errs) > 0 {
			t.Fatalf("routes=%d: %v", n, errs)
		}
		compiled := table.Routes()
		pkts := packetsFor(routes, 500, rand.New(rand.NewPCG(3, 4)))
		for i := range pkts {
			got, ok := table.Lookup(&pkts[i])
			if !ok || got != refLookup(compiled, &pkts[i]) {
				t.Fatalf("routes=%d packet %d: Lookup = %d, %v; scan says %d", n, i, got, ok, refLookup(compiled, &pkts[i]))
			}
		}
	}
}

func TestLookupAllocatesNothing(t *testing.T) {
	routes := realisticRoutes(1000)
	table, errs := Compile(routes)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	pkts := packetsFor(routes, 64, rand.New(rand.NewPCG(5, 6)))
	echo := withKind(packet.KindICMPEcho, flow(model.ProtoICMP, "10.0.0.1", 1, "20.0.0.1", 1))
	miss := flow(tcp, "10.0.0.1", 1, "99.0.0.1", 80)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		table.Lookup(&pkts[i%len(pkts)])
		table.Lookup(echo)
		table.Lookup(miss)
		i++
	})
	if allocs != 0 {
		t.Fatalf("Lookup allocates %.1f times per call", allocs)
	}
}

// TestWildcardSourcesNeedNoCheck pins that the seed's "0.0.0.0/0" and
// "0-65535" make a route win straight from the index.
func TestWildcardSourcesNeedNoCheck(t *testing.T) {
	tests := []struct {
		name   string
		route  model.Route
		uncond bool
	}{
		{"no restrictions", route("r", 1, vip+"/32"), true},
		{"v4 wildcard", route("r", 1, vip+"/32", srcs("0.0.0.0/0"), sports(model.AnyPort), dports(ports(0, 65535))), true},
		{"dual-stack wildcards", route("r", 1, vip+"/32", dsts(vip+"/32", vip6+"/128"), srcs("0.0.0.0/0", "::/0")), true},
		{"v6 wildcard but v4 restricted", route("r", 1, vip+"/32", dsts(vip+"/32", vip6+"/128"), srcs("10.0.0.0/8", "::/0")), false},
		{"source ports", route("r", 1, vip+"/32", sports(ports(1, 2))), false},
		{"byte match", route("r", 1, vip+"/32", bytematches(synSetMatch)), false},
		{"byte match of the other protocol", route("r", 1, vip+"/32", protos(tcp, udp),
			bytematches(model.ByteMatch{Protocol: udp, Size: 1, Mask: 1, Value: 1})), true},
	}
	for _, tt := range tests {
		table, errs := Compile([]model.Route{tt.route})
		if len(errs) > 0 {
			t.Fatalf("%s: %v", tt.name, errs)
		}
		block, _ := table.keys.find(keyOf(netip.MustParseAddr(vip), tcp))
		cands, _ := candidates(table.arena, block, 80)
		if len(cands) != 1 || (cands[0]&candUnconditional != 0) != tt.uncond {
			t.Errorf("%s: candidates %x, want one, unconditional %v", tt.name, cands, tt.uncond)
		}
	}
}
