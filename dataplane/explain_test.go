package dataplane

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
	"github.com/sllbrd/sllbrd/model"
)

func probe(proto model.Protocol, src string, sport uint16, dst string, dport uint16) Probe {
	return Probe{Protocol: proto, Src: netip.AddrPortFrom(addr(src), sport), Dst: netip.AddrPortFrom(addr(dst), dport)}
}

// TestExplainAgreesWithDecide explains random flows of every protocol and
// family and decides the same flows built independently (gopacket): the
// verdict, reason and mark agree, and the endpoint Explain names is the
// one the mark routes to.
func TestExplainAgreesWithDecide(t *testing.T) {
	e, plan := newTestEngine(t, testState())
	rng := rand.New(rand.NewPCG(5, 6))
	balanced := 0
	for i := range 2000 {
		is4 := i%2 == 0
		src, dst := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}), vip4
		if !is4 {
			src, dst = netip.AddrFrom16([16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)}), vip6
		}
		sport, dport := uint16(rng.IntN(65536)), []uint16{80, 7000, 5000}[rng.IntN(3)]
		var pr Probe
		var b []byte
		switch i % 5 {
		case 0, 1, 2:
			proto := []uint8{6, 17, 132}[i%3]
			pr = Probe{Protocol: model.Protocol(proto), Src: netip.AddrPortFrom(src, sport), Dst: netip.AddrPortFrom(dst, dport)}
			b = testpkt.Packet(flow(src, dst, proto, sport, dport), nil, testpkt.Options{})
		default:
			proto := model.ProtoICMP
			if !is4 {
				proto = model.ProtoICMPv6
			}
			pr = Probe{Protocol: proto, Src: netip.AddrPortFrom(src, sport), Dst: netip.AddrPortFrom(dst, 0)}
			b = testpkt.Echo(src, dst, sport, 1)
		}
		x, err := e.Explain(pr)
		if err != nil {
			t.Fatalf("%+v: %v", pr, err)
		}
		d := decide(e, b)
		if x.Verdict != d.Verdict || x.Reason != d.Reason || x.Mark != d.Mark {
			t.Fatalf("%+v: Explain says %v/%v mark %#x, Decide %v/%v mark %#x", pr, x.Verdict, x.Reason, x.Mark, d.Verdict, d.Reason, d.Mark)
		}
		if x.Verdict != Accept {
			continue
		}
		balanced++
		if x.Endpoint == nil || x.Endpoint.Addr != endpointOf(plan, d.Mark, is4) || x.Endpoint.Mark != d.Mark || !x.Endpoint.Ready {
			t.Fatalf("%+v: Explain names endpoint %+v, the mark %#x routes to %v", pr, x.Endpoint, d.Mark, endpointOf(plan, d.Mark, is4))
		}
		if x.Route == nil || x.Route.Name != "ns/all" || x.Family != map[bool]uint8{true: 4, false: 6}[is4] || x.TableSize == 0 {
			t.Fatalf("%+v: route %+v family %d table %d", pr, x.Route, x.Family, x.TableSize)
		}
	}
	if balanced < 1000 {
		t.Fatalf("only %d of 2000 probes balanced: the test does not exercise Explain", balanced)
	}
}

// TestExplainCountsNothing: explaining leaves every counter and the
// fragment table as they were.
func TestExplainCountsNothing(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	decide(e, testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, 1000, 80), nil, testpkt.Options{}))
	before := countersOf(e)
	for i := range 100 {
		for _, pr := range []Probe{
			probe(model.ProtoTCP, "10.0.0.1", uint16(i), "20.0.0.1", 80),
			probe(model.ProtoUDP, "fd00::1", uint16(i), "2001:db8::1", 7000),
			probe(model.ProtoUDP, "10.0.0.1", uint16(i), "20.0.0.99", 80),
		} {
			if _, err := e.Explain(pr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if after := countersOf(e); !reflect.DeepEqual(before, after) {
		t.Fatalf("counters changed by Explain:\nbefore %v\nafter  %v", before, after)
	}
}

// countersOf collects every counter of e.
func countersOf(e *Engine) map[string]any {
	out := map[string]any{"fragments": e.FragmentStats()}
	for _, r := range Reasons() {
		p, b := e.ReasonCount(r)
		out["reason "+r.String()] = [2]uint64{p, b}
	}
	e.EachRoute(func(route, service string, c Count) { out["route "+route] = c })
	e.EachEndpoint(func(service string, id int, a string, c Count) { out["endpoint "+a] = c })
	return out
}

func TestExplainSaysWhy(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	t.Run("no route for the destination", func(t *testing.T) {
		x, err := e.Explain(probe(model.ProtoUDP, "10.0.0.1", 1, "20.0.0.99", 53))
		if err != nil {
			t.Fatal(err)
		}
		want := []RouteMiss{{Check: "destinationCIDRs", Detail: "no route has destination 20.0.0.99"}}
		if x.Reason != ReasonNoRoute || x.Route != nil || !reflect.DeepEqual(x.Misses, want) {
			t.Fatalf("got %+v", x)
		}
	})
	t.Run("no ready endpoint", func(t *testing.T) {
		x, err := e.Explain(probe(model.ProtoUDP, "10.0.0.1", 1, "20.0.0.1", 7000))
		if err != nil {
			t.Fatal(err)
		}
		if x.Reason != ReasonNoEndpoint || x.Verdict != Drop || x.Route == nil || x.Route.Name != "ns/empty" ||
			!x.Balanced || x.ActiveSlots != 0 || x.Endpoint != nil || len(x.Misses) != 0 {
			t.Fatalf("got %+v", x)
		}
	})
	t.Run("lower routes missed", func(t *testing.T) {
		x, err := e.Explain(probe(model.ProtoUDP, "10.0.0.1", 1, "20.0.0.1", 80))
		if err != nil {
			t.Fatal(err)
		}
		want := []RouteMiss{{Route: "ns/empty", Priority: 5, Check: "destinationPorts", Detail: "80 is not in 7000"}}
		if x.Reason != ReasonBalanced || x.Route.Name != "ns/all" || !reflect.DeepEqual(x.Misses, want) {
			t.Fatalf("got %+v", x)
		}
	})
	t.Run("not configured", func(t *testing.T) {
		x, err := NewEngine().Explain(probe(model.ProtoTCP, "10.0.0.1", 1, "20.0.0.1", 80))
		if err != nil || x.Reason != ReasonNotConfigured || x.Generation != 0 {
			t.Fatalf("got %+v, %v", x, err)
		}
	})
}

func TestExplainByteMatchUsesPayload(t *testing.T) {
	st := testState()
	st.Routes = append(st.Routes, model.Route{Name: "ns/teid", Service: "service-a", Priority: 9,
		Destinations: []netip.Prefix{netip.PrefixFrom(vip4, 32)}, Protocols: []model.Protocol{model.ProtoUDP},
		ByteMatches: []model.ByteMatch{{Protocol: model.ProtoUDP, Offset: 8, Size: 1, Mask: 0xff, Value: 0x30}}})
	e, _ := newTestEngine(t, st)
	pr := probe(model.ProtoUDP, "10.0.0.1", 1, "20.0.0.1", 2152)
	x, err := e.Explain(pr)
	if err != nil {
		t.Fatal(err)
	}
	if x.Route.Name != "ns/all" || len(x.Misses) != 2 || x.Misses[0].Detail != "udp[8:1] & 0xff = 0x30: the transport bytes end at 8, before byte 9" {
		t.Fatalf("without payload: %+v", x)
	}
	pr.Payload = []byte{0x30, 0xff}
	if x, err = e.Explain(pr); err != nil || x.Route.Name != "ns/teid" || len(x.Misses) != 0 {
		t.Fatalf("with payload: %+v, %v", x, err)
	}
	pr.CopyRange = 28 // the IPv4 and UDP headers only: the kernel copies no payload
	if x, err = e.Explain(pr); err != nil || x.Route.Name != "ns/all" {
		t.Fatalf("with payload cut by the copy range: %+v, %v", x, err)
	}
}

func TestProbeRejectsBadInput(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	for _, tc := range []struct {
		pr   Probe
		want string
	}{
		{probe(model.ProtoTCP, "10.0.0.1", 1, "2001:db8::1", 80), "different address families"},
		{probe(model.ProtoICMP, "fd00::1", 1, "2001:db8::1", 0), "icmp needs IPv4 addresses"},
		{probe(model.ProtoICMPv6, "10.0.0.1", 1, "20.0.0.1", 0), "icmpv6 needs IPv6 addresses"},
		{probe(model.ProtoICMP, "10.0.0.1", 1, "20.0.0.1", 80), "the destination has no port"},
		{probe(47, "10.0.0.1", 1, "20.0.0.1", 80), "want tcp, udp, sctp, icmp or icmpv6"},
		{Probe{Protocol: model.ProtoTCP}, "addresses are required"},
		{Probe{Protocol: model.ProtoUDP, Src: netip.MustParseAddrPort("10.0.0.1:1"), Dst: netip.MustParseAddrPort("20.0.0.1:2"),
			Payload: make([]byte, MaxProbePayload+1)}, "at most 1024"},
	} {
		if _, err := e.Explain(tc.pr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.pr, err, tc.want)
		}
	}
}

// TestProbeDecodes: the decoder reads every probe as the flow it describes.
func TestProbeDecodes(t *testing.T) {
	for _, pr := range []Probe{
		probe(model.ProtoTCP, "10.0.0.1", 1234, "20.0.0.1", 80),
		probe(model.ProtoUDP, "fd00::1", 1234, "2001:db8::1", 53),
		probe(model.ProtoSCTP, "::ffff:10.0.0.1", 1234, "20.0.0.1", 3868),
		probe(model.ProtoICMP, "10.0.0.1", 77, "20.0.0.1", 0),
		probe(model.ProtoICMPv6, "fd00::1", 77, "2001:db8::1", 0),
	} {
		b, n := pr.bytes()
		var p packet.Packet
		p.Decode(b)
		wantKind, dport := packet.KindTransport, pr.Dst.Port()
		if pr.Protocol == model.ProtoICMP || pr.Protocol == model.ProtoICMPv6 {
			wantKind, dport = packet.KindICMPEcho, pr.Src.Port()
		}
		if p.Kind != wantKind || p.Proto != pr.Protocol || p.Src != pr.Src.Addr().Unmap() || p.Dst != pr.Dst.Addr().Unmap() ||
			p.SrcPort != pr.Src.Port() || p.DstPort != dport || n != len(b) {
			t.Errorf("%+v decodes to %+v (length %d of %d)", pr, p, len(b), n)
		}
	}
}
