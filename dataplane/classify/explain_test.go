package classify

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/model"
)

// TestExplainEcho: an echo is checked against sources only, so the
// highest route admitting the pinger wins whatever its ports and bytes.
func TestExplainEcho(t *testing.T) {
	table, errs := Compile([]model.Route{
		route("ns/src", 40, vip+"/32", srcs("11.0.0.0/8")),
		route("ns/any", 30, vip+"/32", dports(ports(80, 80)), protos(udp)),
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p := withKind(packet.KindICMPEcho, flow(model.ProtoICMP, "10.0.0.1", 7, vip, 7))
	want := []Miss{{0, "sourceCIDRs", "10.0.0.1 is not in 11.0.0.0/8"}}
	if got := table.Explain(p); !slices.Equal(got, want) {
		t.Fatalf("Explain = %+v, want %+v", got, want)
	}
	if idx, ok := table.Lookup(p); !ok || table.Name(idx) != "ns/any" {
		t.Fatalf("Lookup = %d %v, want ns/any", idx, ok)
	}
}

func TestExplainSaysWhichCheckFailed(t *testing.T) {
	syn := model.ByteMatch{Protocol: tcp, Offset: 13, Size: 1, Mask: 0x02, Value: 0x02}
	routes := []model.Route{
		route("ns/bytes", 60, vip+"/32", bytematches(syn)),
		route("ns/sport", 50, vip+"/32", sports(ports(1000, 1999))),
		route("ns/src", 40, vip+"/32", srcs("11.0.0.0/8", "fd00::/64")),
		route("ns/dport", 30, vip+"/32", dports(ports(80, 80), ports(5000, 5010))),
		route("ns/udp", 20, vip+"/32", protos(udp)),
		route("ns/other-vip", 10, "20.0.0.9/32"),
	}
	table, errs := Compile(routes)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ack := make([]byte, 20)
	ack[13] = 0x10
	tests := []struct {
		name string
		p    *packet.Packet
		want []Miss
	}{
		{name: "every check", p: flow(tcp, "10.0.0.1", 7, vip, 81, ack...), want: []Miss{
			{0, "byteMatches[0]", "tcp[13:1] & 0x2 = 0x2: the packet has 0x10"},
			{1, "sourcePorts", "7 is not in 1000-1999"},
			{2, "sourceCIDRs", "10.0.0.1 is not in 11.0.0.0/8, fd00::/64"},
			{3, "destinationPorts", "81 is not in 80, 5000-5010"},
			{4, "protocols", "tcp is not one of udp"},
		}},
		{name: "short transport bytes", p: flow(tcp, "11.0.0.1", 1500, vip, 80, 1, 2), want: []Miss{
			{0, "byteMatches[0]", "tcp[13:1] & 0x2 = 0x2: the transport bytes end at 2, before byte 14"},
		}},
		{name: "no route has the destination", p: flow(tcp, "10.0.0.1", 7, "20.0.0.7", 80), want: []Miss{
			{-1, "destinationCIDRs", "no route has destination 20.0.0.7"},
		}},
		{name: "later fragment", p: withKind(packet.KindLaterFragment, flow(udp, "10.0.0.1", 0, vip, 0)), want: []Miss{
			{-1, "packet", "a later-fragment packet never matches a route"},
		}},
		{name: "the winner stops the list", p: flow(tcp, "11.0.0.1", 7, vip, 81, ack...), want: []Miss{
			{0, "byteMatches[0]", "tcp[13:1] & 0x2 = 0x2: the packet has 0x10"},
			{1, "sourcePorts", "7 is not in 1000-1999"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := table.Explain(tt.p); !slices.Equal(got, tt.want) {
				t.Fatalf("Explain =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestExplainAgreesWithLookup checks Explain against Lookup and the
// reference scan on random routes and packets: every route of the
// packet's destination ranked above the winner (all of them when none
// wins) has exactly one miss, naming a check, and the reference scan
// agrees that the route does not match.
func TestExplainAgreesWithLookup(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	explained := 0
	for round := range 200 {
		table, errs := Compile(randomRoutes(1+rng.IntN(12), rng))
		if len(errs) > 0 {
			t.Fatalf("round %d: %v", round, errs)
		}
		compiled := table.Routes()
		for range 100 {
			p := randomPacket(rng)
			misses := table.Explain(p)
			winner, won := table.Lookup(p)
			if !won {
				winner = len(compiled)
			}
			if _, ok := lookupProto(p); !ok {
				if len(misses) != 1 || misses[0].Check != "packet" {
					t.Fatalf("round %d: %s packet: misses %+v", round, p.Kind, misses)
				}
				continue
			}
			var want []int
			for rank := range winner {
				if slices.ContainsFunc(compiled[rank].Destinations, func(d netip.Prefix) bool { return d.Addr() == p.Dst.Unmap() }) {
					want = append(want, rank)
				}
			}
			if len(want) == 0 && !won {
				if len(misses) != 1 || misses[0].Route != -1 || misses[0].Check != "destinationCIDRs" {
					t.Fatalf("round %d: no route for %v, misses %+v", round, p.Dst, misses)
				}
				continue
			}
			if len(misses) != len(want) {
				t.Fatalf("round %d: %d misses %+v for routes %v", round, len(misses), misses, want)
			}
			for i, m := range misses {
				if m.Route != want[i] || m.Check == "" || m.Detail == "" {
					t.Fatalf("round %d: miss %d = %+v, want one naming a check for route %d", round, i, m, want[i])
				}
				if refLookup(compiled[m.Route:m.Route+1], p) != -1 {
					t.Fatalf("round %d: the reference scan matches route %d that Explain says misses (%+v)", round, m.Route, m)
				}
				explained++
			}
		}
	}
	if explained < 1000 {
		t.Fatalf("only %d misses explained: the generator does not exercise Explain", explained)
	}
}
