package dataplane

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/bpfpath"
	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/dataplane/flowkey"
	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
	"github.com/sllbrd/sllbrd/maglev"
	"github.com/sllbrd/sllbrd/model"
)

// The eBPF datapath (package bpfpath) is checked from this side because
// what it must agree with is here: the engine's decision (snapshot.choose),
// the input both kernel paths are programmed from (Plan.kernelInput) and
// the model of the nftables kernel path (nftVM).

// loadBPFPath loads the eBPF datapath for a test, ending it as require
// says when it cannot.
func loadBPFPath(tb testing.TB) *bpfpath.Datapath {
	tb.Helper()
	require.Root(tb)
	d, err := bpfpath.Load(bpfpath.Options{})
	if errors.Is(err, os.ErrPermission) {
		require.Missing(tb, "%v", err)
	}
	if err != nil {
		tb.Fatalf("%+v", err)
	}
	tb.Cleanup(func() { _ = d.Close() })
	return d
}

// bpfCheck runs packets through the eBPF datapath and checks each result
// against the engine's decision and the kernel path's (st's, committed).
type bpfCheck struct {
	t        *testing.T
	d        *bpfpath.Datapath
	e        *Engine
	vm       *nftVM
	st       *model.State
	statuses map[bpfpath.Status]int
	packets  int
}

// configure builds and commits st in a new engine, programs the eBPF
// datapath with the plan's kernel input and models the kernel path's.
func (c *bpfCheck) configure(st *model.State) bpfpath.Report {
	c.t.Helper()
	c.e, c.st = NewEngine(), st
	plan, err := c.e.Build(st)
	if err != nil {
		c.t.Fatal(err)
	}
	c.e.Commit(plan)
	in := plan.kernelInput(255)
	rep, err := c.d.Configure(in)
	if err != nil {
		c.t.Fatalf("Configure: %v", err)
	}
	c.vm = newNFTVM(fastpath.Compile(in).Table)
	return rep
}

// check runs the IP packet b (in an Ethernet frame) through the program
// and fails the test unless its result is the engine's decision: a
// decided packet gets the engine's route, slot, mark and hash (and the
// kernel path's mark); no_route and no_endpoint are the engine's; every
// other punt is one the kernel path punts too, or (byte matches) stops at
// a route with a byte match of the packet's protocol that the packet may
// match; and what the kernel path decides, the program decides.
func (c *bpfCheck) check(b []byte) bpfpath.Result {
	c.t.Helper()
	got, err := c.d.Explain(ethernet(b))
	if err != nil {
		c.t.Fatalf("packet %x: %v", b, err)
	}
	c.packets++
	c.statuses[got.Status]++
	var p packet.Packet
	p.Decode(b)
	vmMark, vmDecided, err := c.vm.run(b)
	if err != nil {
		c.t.Fatalf("kernel path model: %v", err)
	}
	s := c.e.snap.Load()
	ch := choice{reason: ReasonUnsupported, route: -1}
	if p.Kind == packet.KindTransport || p.Kind == packet.KindICMPEcho {
		ch = s.choose(&p)
	}
	fail := func(format string, args ...any) {
		c.t.Helper()
		c.t.Fatalf("packet %x (%v proto %d %v:%d -> %v:%d): the program says %+v (%v); the engine %v, route %d, slot %d, mark %#x, hash %#x; the kernel path decided %v, mark %#x: %s\nroutes %+v",
			b, p.Kind, p.Proto, p.Src, p.SrcPort, p.Dst, p.DstPort, got, got.Status, ch.reason, ch.route, ch.slot, ch.mark, ch.hash,
			vmDecided, vmMark, fmt.Sprintf(format, args...), c.st.Routes)
	}
	if vmDecided && got.Status != bpfpath.StatusDecided && got.Status != bpfpath.StatusPuntUnexpressible {
		fail("the kernel path decides it, the program punts it")
	}
	switch got.Status {
	case bpfpath.StatusDecided:
		switch {
		case !vmDecided || vmMark != got.Mark:
			fail("the kernel path does not decide it alike")
		case ch.reason != ReasonBalanced || ch.route != got.Route || uint32(ch.slot) != got.Slot || ch.mark != got.Mark || ch.hash != got.Hash:
			fail("not the engine's decision")
		case got.Entry != maglev.ReciprocalScale(ch.hash, uint32(ch.fam.table.Size())):
			fail("entry %d is not the hash's in M = %d", got.Entry, ch.fam.table.Size())
		case got.KeyLen != uint32(flowkey.Len(p.Family, p.Proto, ch.target.service.sctpPortsOnly)):
			fail("key length %d", got.KeyLen)
		}
	case bpfpath.StatusPuntNoRoute:
		if ch.reason != ReasonNoRoute {
			fail("the engine finds a route")
		}
	case bpfpath.StatusPuntNoEndpoint:
		switch {
		case ch.reason != ReasonNoEndpoint || ch.route != got.Route:
			fail("not the engine's no_endpoint")
		case ch.fam != nil && got.Hash != ch.hash, ch.fam == nil && got.Hash != 0:
			fail("the hash of a Service that exists (and only then) must be the engine's")
		}
	case bpfpath.StatusPuntUnexpressible:
		c.unexpressible(s, &p, ch, got, fail)
	case bpfpath.StatusPuntMappedSource:
		if p.Family != 6 || !p.Src.Is4In6() {
			fail("not an IPv4-mapped source")
		}
	case bpfpath.StatusPuntNotVIP:
		if ch.reason != ReasonNoRoute && !p.Dst.Is4In6() {
			fail("the engine finds a route, to a destination that is no IPv4-mapped address")
		}
	case bpfpath.StatusPuntLimit:
		fail("no configuration here is beyond the program's limits")
	}
	return got
}

// unexpressible checks a StatusPuntUnexpressible: its route has a byte
// match of the packet's protocol, and no route above it matched; when the
// engine picked another route (or none), this one failed on byte matches
// only.
func (c *bpfCheck) unexpressible(s *snapshot, p *packet.Packet, ch choice, got bpfpath.Result, fail func(string, ...any)) {
	if got.Route < 0 || got.Route >= s.routes.Len() {
		fail("no such route")
		return
	}
	r := s.routes.Route(got.Route)
	switch {
	case !slices.ContainsFunc(r.ByteMatches, func(m model.ByteMatch) bool { return m.Protocol == p.Proto }):
		fail("route %s has no byte match of the packet's protocol", r.Name)
	case ch.route >= 0 && ch.route < got.Route:
		fail("the engine matched a route above it")
	case ch.route != got.Route:
		for _, m := range s.routes.Explain(p) {
			if m.Route == got.Route && !strings.HasPrefix(m.Check, "byteMatches[") {
				fail("route %s fails on %s, not on byte matches", r.Name, m.Check)
			}
		}
	}
}

// ethernet wraps an IP packet in an Ethernet header of its IP version.
func ethernet(b []byte) []byte {
	f := []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00}
	if len(b) > 0 && b[0]>>4 == 6 {
		f[12], f[13] = 0x86, 0xdd
	}
	return append(f, b...)
}

// genBPFState is genState, with one Service sometimes large enough (110
// to 700 slots) for a Maglev table above maglev.MinSize, so that M varies.
func genBPFState(r *rand.Rand) *model.State {
	st := genState(r, 255)
	if r.IntN(3) == 0 {
		svc := &st.Services[0]
		svc.MaxEndpoints = 110 + r.IntN(600)
		svc.Endpoints = svc.Endpoints[:0]
		for id := range svc.MaxEndpoints {
			if r.IntN(3) == 0 {
				continue
			}
			svc.Endpoints = append(svc.Endpoints,
				model.Endpoint{ID: id, Ready: r.IntN(5) != 0, Addr: netip.AddrFrom4([4]byte{169, 112, byte(id >> 8), byte(id)})},
				model.Endpoint{ID: id, Ready: r.IntN(5) != 0, Addr: netip.AddrFrom16([16]byte{0xfd, 0, 2, 15: byte(id), 14: byte(id >> 8)})})
		}
	}
	return st
}

// genBPFPacket draws a packet for st: a quarter from genPacket (fragments,
// ICMP errors, extension headers, truncated headers, echoes), the rest
// aimed at a route: one of its VIPs (sometimes another address, or the
// VIP IPv4-mapped in IPv6), mostly one of its protocols, sources at the
// edges of its source CIDRs and ports at the edges of its port ranges.
func genBPFPacket(r *rand.Rand, st *model.State) []byte {
	if r.IntN(4) == 0 || len(st.Routes) == 0 {
		return genPacket(r)
	}
	rt := st.Routes[r.IntN(len(st.Routes))]
	dst := rt.Destinations[r.IntN(len(rt.Destinations))].Addr().Unmap()
	src := edgeSource(r, rt.Sources, dst.Is4())
	switch r.IntN(20) {
	case 0:
		dst = dst.Next()
	case 1:
		if dst.Is4() {
			dst, src = netip.AddrFrom16(dst.As16()), netip.MustParseAddr("fd00::7")
		}
	}
	if r.IntN(8) == 0 {
		return testpkt.Echo(src, dst, uint16(r.Uint32()), 1)
	}
	proto := genProtos[r.IntN(len(genProtos))]
	if r.IntN(8) != 0 {
		proto = rt.Protocols[r.IntN(len(rt.Protocols))]
	}
	payload := make([]byte, r.IntN(16))
	for i := range payload {
		payload[i] = byte(r.IntN(4))
	}
	f := testpkt.Flow{Src: src, Dst: dst, Proto: uint8(proto), SrcPort: edgePort(r, rt.SourcePorts), DstPort: edgePort(r, rt.DestinationPorts)}
	return testpkt.Packet(f, payload, testpkt.Options{})
}

// edgeSource draws a source of the family (is4): mostly the first or last
// address of one of the prefixes of that family, or one just outside it,
// else one of genSources.
func edgeSource(r *rand.Rand, prefixes []netip.Prefix, is4 bool) netip.Addr {
	var fam []netip.Prefix
	for _, p := range prefixes {
		if p.Addr().Unmap().Is4() == is4 && !p.Addr().Is4In6() {
			fam = append(fam, p.Masked())
		}
	}
	if !is4 && r.IntN(8) == 0 {
		return netip.MustParseAddr("::ffff:10.0.0.7") // userspace compares it with IPv4 CIDRs
	}
	if len(fam) > 0 && r.IntN(4) != 0 {
		p := fam[r.IntN(len(fam))]
		first, last := p.Addr(), genLast[p]
		if !last.IsValid() {
			last = first
		}
		a := []netip.Addr{first, last, first.Prev(), last.Next(), first.Next()}[r.IntN(5)]
		if a.IsValid() {
			return a
		}
		return first
	}
	for {
		a := genSources[r.IntN(len(genSources))]
		if a.Unmap().Is4() == is4 && (!is4 || a.Is4()) {
			return a
		}
	}
}

// genLast is the last address of each of genPrefixes.
var genLast = map[netip.Prefix]netip.Addr{
	genPrefixes[0]: netip.MustParseAddr("10.255.255.255"),
	genPrefixes[1]: netip.MustParseAddr("10.1.255.255"),
	genPrefixes[2]: netip.MustParseAddr("192.0.2.9"),
	genPrefixes[3]: netip.MustParseAddr("255.255.255.255"),
	genPrefixes[4]: netip.MustParseAddr("fd00:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
	genPrefixes[5]: netip.MustParseAddr("fd00:1:ffff:ffff:ffff:ffff:ffff:ffff"),
	genPrefixes[6]: netip.MustParseAddr("2001:db8::9"),
	genPrefixes[7]: netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
}

// edgePort draws a port: mostly at or just beyond an edge of one of the
// ranges, or inside one, else anywhere.
func edgePort(r *rand.Rand, ranges []model.PortRange) uint16 {
	if len(ranges) == 0 || r.IntN(5) == 0 {
		return []uint16{0, 1, 65535, uint16(r.Uint32())}[r.IntN(4)]
	}
	pr := ranges[r.IntN(len(ranges))]
	inside := pr.From + uint16(r.IntN(int(pr.To-pr.From)+1))
	return []uint16{pr.From - 1, pr.From, pr.To, pr.To + 1, inside, inside}[r.IntN(6)]
}

// TestIntegrationBPFPathMatchesEngine programs the eBPF datapath with
// random configurations (genBPFState: four VIPs of both families, routes
// with random precedence, protocols, sources, ports and byte matches,
// Services with random endpoints and M), one after the other on the same
// program, so that every Configure replaces tables and route sets, and
// checks thousands of packets aimed at the routes' edges against the
// engine and the kernel path (bpfCheck.check).
func TestIntegrationBPFPathMatchesEngine(t *testing.T) {
	for _, p := range genPrefixes {
		if last := genLast[p]; !p.Contains(last) || (last.Next().IsValid() && p.Contains(last.Next())) {
			t.Fatalf("genLast[%v] = %v, not its last address", p, last)
		}
	}
	c := &bpfCheck{t: t, d: loadBPFPath(t), statuses: map[bpfpath.Status]int{}}
	const configs, packets = 200, 300
	start := time.Now()
	var configureTime time.Duration
	written := 0
	for seed := range uint64(configs) {
		r := rand.New(rand.NewPCG(seed, 25))
		st := genBPFState(r)
		cs := time.Now()
		rep := c.configure(st)
		configureTime += time.Since(cs)
		written += rep.RouteSetsWritten + rep.TablesWritten
		for range packets {
			c.check(genBPFPacket(r, st))
		}
	}
	t.Logf("%d configurations (%d route sets and tables written, in %v), %d packets checked in %v; statuses %v",
		configs, written, configureTime.Round(time.Millisecond), c.packets, time.Since(start).Round(time.Millisecond), c.statuses)
	for _, s := range []bpfpath.Status{bpfpath.StatusDecided, bpfpath.StatusPuntNoRoute, bpfpath.StatusPuntNoEndpoint,
		bpfpath.StatusPuntUnexpressible, bpfpath.StatusPuntMappedSource, bpfpath.StatusPuntNotVIP, bpfpath.StatusPuntFragment,
		bpfpath.StatusPuntICMPError, bpfpath.StatusPuntIPv6Extension, bpfpath.StatusPuntMalformed} {
		if c.statuses[s] == 0 {
			t.Errorf("no packet ended %v: the generator misses it", s)
		}
	}
	if c.statuses[bpfpath.StatusDecided] < c.packets/5 {
		t.Errorf("only %d of %d packets decided: the generator misses the routes", c.statuses[bpfpath.StatusDecided], c.packets)
	}
}

// FuzzBPFPathMatchesEngine is TestIntegrationBPFPathMatchesEngine over
// fuzzed seeds: one configuration and 100 packets per input, on one
// program per fuzz process.
// Run: go test ./dataplane -run '^$' -fuzz FuzzBPFPathMatchesEngine -fuzztime 60s
func FuzzBPFPathMatchesEngine(f *testing.F) {
	c := &bpfCheck{d: loadBPFPath(f), statuses: map[bpfpath.Status]int{}}
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		c.t = t
		r := rand.New(rand.NewPCG(a, b))
		st := genBPFState(r)
		c.configure(st)
		for range 100 {
			c.check(genBPFPacket(r, st))
		}
	})
}

// TestIntegrationBPFPathSwaps replaces a Service's table (endpoints leave
// and come) and a VIP's route set (a new route above the old one, which
// loses a protocol) and checks that the next packets are decided with the
// new ones, and that only what changed was written.
func TestIntegrationBPFPathSwaps(t *testing.T) {
	c := &bpfCheck{t: t, d: loadBPFPath(t), statuses: map[bpfpath.Status]int{}}
	vip4, vip6 := netip.MustParseAddr("20.0.0.1"), netip.MustParseAddr("2000::1")
	other4 := netip.MustParseAddr("20.0.0.2")
	service := func(name string, n int, ready func(id int) bool) model.Service {
		s := model.Service{Name: name, MaxEndpoints: n}
		for id := range n {
			s.Endpoints = append(s.Endpoints,
				model.Endpoint{ID: id, Ready: ready(id), Addr: netip.AddrFrom4([4]byte{169, 111, byte(len(name)), byte(id)})},
				model.Endpoint{ID: id, Ready: ready(id), Addr: netip.AddrFrom16([16]byte{0xfd, 14: byte(len(name)), 15: byte(id)})})
		}
		return s
	}
	route := func(name string, prio int32, svc string, protos []model.Protocol, dports []model.PortRange, vips ...netip.Addr) model.Route {
		r := model.Route{Name: name, Priority: prio, Service: svc, Protocols: protos, DestinationPorts: dports}
		for _, v := range vips {
			r.Destinations = append(r.Destinations, netip.PrefixFrom(v, v.BitLen()))
		}
		return r
	}
	all := func(int) bool { return true }
	tcpUDP := []model.Protocol{model.ProtoTCP, model.ProtoUDP}
	a := &model.State{Generation: 1,
		Services: []model.Service{service("svc-a", 8, all), service("svc-b", 4, all)},
		Routes: []model.Route{route("ns/web", 2, "svc-a", tcpUDP, nil, vip4, vip6),
			route("ns/other", 10, "svc-b", tcpUDP, nil, other4)}}
	b := &model.State{Generation: 2,
		Services: []model.Service{service("svc-a", 8, func(id int) bool { return id < 3 || id == 6 }), service("svc-b", 4, all)},
		Routes: []model.Route{route("ns/web", 2, "svc-a", []model.Protocol{model.ProtoUDP}, nil, vip4, vip6),
			route("ns/api", 3, "svc-b", []model.Protocol{model.ProtoTCP}, []model.PortRange{{From: 80, To: 90}}, vip4, vip6),
			route("ns/other", 10, "svc-b", tcpUDP, nil, other4)}}
	flows := func(r *rand.Rand, dst netip.Addr, proto model.Protocol, dport uint16, n int) [][]byte {
		var out [][]byte
		for range n {
			src := netip.AddrFrom4([4]byte{10, byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
			if dst.Is6() {
				src = netip.AddrFrom16([16]byte{0xfd, 0, 9, 14: byte(r.IntN(256)), 15: byte(r.IntN(256))})
			}
			out = append(out, testpkt.Packet(testpkt.Flow{Src: src, Dst: dst, Proto: uint8(proto), SrcPort: uint16(1024 + r.IntN(60000)), DstPort: dport}, nil, testpkt.Options{}))
		}
		return out
	}
	r := rand.New(rand.NewPCG(25, 3))
	slotsOf := func(pkts [][]byte, want bpfpath.Status, route int) map[uint32]bool {
		t.Helper()
		slots := map[uint32]bool{}
		for _, p := range pkts {
			got := c.check(p)
			if got.Status != want || got.Route != route {
				t.Fatalf("packet %x: %v, route %d; want %v, route %d", p, got.Status, got.Route, want, route)
			}
			slots[got.Slot] = true
		}
		return slots
	}

	if rep := c.configure(a); rep.VIPs != 3 || rep.Tables != 4 {
		t.Fatalf("configuration a: %+v, want 3 VIPs and 4 tables", rep)
	}
	for _, vip := range []netip.Addr{vip4, vip6} {
		if slots := slotsOf(flows(r, vip, model.ProtoTCP, 85, 300), bpfpath.StatusDecided, 1); len(slots) != 8 {
			t.Errorf("a, TCP to %v: slots %v, want all 8 of svc-a", vip, slots)
		}
	}

	rep := c.configure(b)
	// svc-a's two tables and the two VIPs' route sets; svc-b and 20.0.0.2
	// (its route ranks first in both) are unchanged.
	if rep.TablesWritten != 2 || rep.RouteSetsWritten != 2 || rep.VIPs != 3 || rep.Tables != 4 {
		t.Fatalf("configuration b: %+v, want 2 tables and 2 route sets written, 3 VIPs and 4 tables", rep)
	}
	for _, vip := range []netip.Addr{vip4, vip6} {
		// ns/api (svc-b) now comes before ns/web for TCP to 80-90.
		if slots := slotsOf(flows(r, vip, model.ProtoTCP, 85, 200), bpfpath.StatusDecided, 1); len(slots) != 4 {
			t.Errorf("b, TCP to %v port 85: slots %v, want all 4 of svc-b", vip, slots)
		}
		// ns/web has lost TCP.
		slotsOf(flows(r, vip, model.ProtoTCP, 8080, 50), bpfpath.StatusPuntNoRoute, bpfpath.NoRoute)
		// svc-a's new table has slots 0, 1, 2 and 6 only.
		slots := slotsOf(flows(r, vip, model.ProtoUDP, 53, 300), bpfpath.StatusDecided, 2)
		if want := map[uint32]bool{0: true, 1: true, 2: true, 6: true}; !maps.Equal(slots, want) {
			t.Errorf("b, UDP to %v: slots %v, want %v", vip, slots, want)
		}
	}
	t.Logf("%d packets checked; statuses %v", c.packets, c.statuses)
}
