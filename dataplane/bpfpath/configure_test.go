package bpfpath

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/model"
)

// flowFrame is an Ethernet frame of a TCP or UDP packet (8 bytes of
// transport header, ports first) from src to dst.
func flowFrame(proto uint8, src, dst netip.AddrPort) []byte {
	l4 := make([]byte, 8)
	binary.BigEndian.PutUint16(l4[0:], src.Port())
	binary.BigEndian.PutUint16(l4[2:], dst.Port())
	if src.Addr().Is4() {
		ip := make([]byte, 20, 28)
		ip[0], ip[8], ip[9] = 0x45, 64, proto
		binary.BigEndian.PutUint16(ip[2:], 28)
		copy(ip[12:], src.Addr().AsSlice())
		copy(ip[16:], dst.Addr().AsSlice())
		return ether(etherIPv4, append(ip, l4...), nil)
	}
	ip := make([]byte, 40, 48)
	ip[0], ip[6], ip[7] = 0x60, proto, 64
	binary.BigEndian.PutUint16(ip[4:], 8)
	copy(ip[8:], src.Addr().AsSlice())
	copy(ip[24:], dst.Addr().AsSlice())
	return ether(etherIPv6, append(ip, l4...), nil)
}

// limitsInput has, for testVIP4, a route with more source CIDRs than
// MaxSourceCIDRs (TCP to port 2000), one with a byte match (TCP to port
// 3000), one to a second Service (TCP to port 4000), one with more source
// port ranges than MaxPortRanges (UDP), then MaxRoutesPerVIP+1 more (route
// ns/rNN: TCP to port 1000+NN).
func limitsInput(t testing.TB) fastpath.Input {
	tbl := buildTable(t, 7, 2, 1)
	in := oneService(service{tbl, false})
	in.Services = append(in.Services, in.Services[0])
	in.Services[1].Name = "svc-2"
	vip := []netip.Prefix{netip.PrefixFrom(testVIP4, 32)}
	tcp, udp := []model.Protocol{model.ProtoTCP}, []model.Protocol{model.ProtoUDP}
	in.Routes = []model.Route{
		{Name: "ns/cidrs", Service: "svc", Destinations: vip, Protocols: tcp, DestinationPorts: []model.PortRange{{From: 2000, To: 2000}}},
		{Name: "ns/bytes", Service: "svc", Destinations: vip, Protocols: tcp, DestinationPorts: []model.PortRange{{From: 3000, To: 3000}},
			ByteMatches: []model.ByteMatch{{Protocol: model.ProtoTCP, Offset: 4, Size: 1, Mask: 0xff, Value: 1}}},
		{Name: "ns/svc-2", Service: "svc-2", Destinations: vip, Protocols: tcp, DestinationPorts: []model.PortRange{{From: 4000, To: 4000}}},
	}
	for i := range MaxSourceCIDRs + 1 {
		in.Routes[0].Sources = append(in.Routes[0].Sources, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16))
	}
	ports := model.Route{Name: "ns/ports", Service: "svc", Destinations: vip, Protocols: udp}
	for i := range MaxPortRanges + 1 {
		ports.SourcePorts = append(ports.SourcePorts, model.PortRange{From: uint16(10 * i), To: uint16(10*i + 1)})
	}
	in.Routes = append(in.Routes, ports)
	for i := range MaxRoutesPerVIP + 1 {
		in.Routes = append(in.Routes, model.Route{Name: fmt.Sprintf("ns/r%02d", i), Service: "svc", Destinations: vip,
			Protocols: tcp, DestinationPorts: []model.PortRange{{From: uint16(1000 + i), To: uint16(1000 + i)}}})
	}
	return in
}

// TestRouteSetsLimits: what lies beyond the limits becomes a route the
// program punts at its place, and the report says so.
func TestRouteSetsLimits(t *testing.T) {
	in := limitsInput(t)
	sets, punted := routeSets(in.Routes, func(name string, fam uint8) (uint32, bool) { return tableKey(0, fam), name == "svc" },
		func(string) bool { return true })
	set := sets[testVIP4].set
	if set.RouteCount != uint32(MaxRoutesPerVIP) {
		t.Fatalf("%d routes, want %d", set.RouteCount, MaxRoutesPerVIP)
	}
	for i, want := range map[int]uint8{0: routeOverLimit, 2: routeOverLimit, 3: routeOverLimit, MaxRoutesPerVIP - 1: routeOverLimit} {
		if got := set.Routes[i].Flags; got != want {
			t.Errorf("route %d: flags %#x, want %#x", i, got, want)
		}
	}
	if got := set.Routes[0]; got.DportCount != 1 || got.Dport[0] != (ingressPortRange{From: 2000, To: 2000}) || got.SrcCount != 0 {
		t.Errorf("ns/cidrs: %+v, want its destination port kept and no source", got)
	}
	if got := set.Routes[1]; got.ByteProtos != protoBitTCP || got.Flags != routeAnySource || got.Table != 0 {
		t.Errorf("ns/bytes: %+v, want a TCP byte match, any source, table 0", got)
	}
	if got := set.Routes[MaxRoutesPerVIP-1]; got.Rank != uint32(MaxRoutesPerVIP-1) || got.Protos != protoBitTCP {
		t.Errorf("the marker: %+v, want rank %d, TCP", got, MaxRoutesPerVIP-1)
	}
	want := []string{"ns/cidrs", "ns/bytes", "ns/svc-2", "ns/ports", "more than 16 routes"}
	if len(punted) != len(want) {
		t.Fatalf("punted %q, want one line each for %q", punted, want)
	}
	for i, w := range want {
		if !strings.Contains(punted[i], w) {
			t.Errorf("punted[%d] = %q, want about %s", i, punted[i], w)
		}
	}
}

// TestTableOf: the header, then each entry's mark and slot; an entry
// without a mark is an error.
func TestTableOf(t *testing.T) {
	tbl := buildTable(t, 7, 2, 1)
	in := oneService(service{tbl, true})
	got, err := tableOf(&in.Services[0], 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 || got[0] != (ingressTableEntry{Mark: 7, Slot: tableSCTPPortsOnly}) {
		t.Fatalf("table %+v, want a header of M = 7 with the SCTP flag, then 7 entries", got)
	}
	for i, slot := range tbl.AppendEntrySlots(nil) {
		if got[i+1] != (ingressTableEntry{Mark: testMark(int(slot)), Slot: uint32(slot)}) {
			t.Errorf("entry %d: %+v, want slot %d", i, got[i+1], slot)
		}
	}
	in.Services[0].Endpoints = in.Services[0].Endpoints[:1]
	if _, err := tableOf(&in.Services[0], 4); err == nil || !strings.Contains(err.Error(), "slot 1") {
		t.Errorf("an entry of slot 1, which has no endpoint: %v, want an error", err)
	}
}

// TestIntegrationConfigureLimits runs packets into each limit: the program
// decides what lies before it and punts (StatusPuntLimit,
// StatusPuntUnexpressible) at its place, as doc.go says; Services and
// VIPs beyond the maps' capacity are left to userspace.
func TestIntegrationConfigureLimits(t *testing.T) {
	require.Root(t)
	d := load(t, Options{MaxServices: 1, MaxVIPs: 1})
	in := limitsInput(t)
	in.Routes = append(in.Routes, model.Route{Name: "ns/v6", Service: "svc", Destinations: []netip.Prefix{netip.PrefixFrom(testVIP6, 128)},
		Protocols: []model.Protocol{model.ProtoTCP}})
	rep, err := d.Configure(in)
	if err != nil {
		t.Fatal(err)
	}
	if rep.VIPs != 1 || rep.Tables != 2 || len(rep.Userspace) != 7 {
		t.Fatalf("report %+v, want 1 VIP, 2 tables and 7 lines to userspace", rep)
	}
	src := netip.AddrPortFrom(netip.MustParseAddr("10.0.0.9"), 5)
	for _, tc := range []struct {
		proto uint8
		dst   netip.AddrPort
		want  Status
		route int
	}{
		{protoTCP, netip.AddrPortFrom(testVIP4, 2000), StatusPuntLimit, 0},
		{protoTCP, netip.AddrPortFrom(testVIP4, 3000), StatusPuntUnexpressible, 1},
		{protoTCP, netip.AddrPortFrom(testVIP4, 4000), StatusPuntLimit, 2},
		{protoUDP, netip.AddrPortFrom(testVIP4, 53), StatusPuntLimit, 3},
		{protoTCP, netip.AddrPortFrom(testVIP4, 1000), StatusDecided, 4},
	} {
		got, err := d.Explain(flowFrame(tc.proto, src, tc.dst))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != tc.want || got.Route != tc.route {
			t.Errorf("protocol %d to %v: %v at route %d, want %v at route %d", tc.proto, tc.dst, got.Status, got.Route, tc.want, tc.route)
		}
	}
	// Without the four routes above, the routes before the marker are
	// decided and the marker punts the rest.
	in.Routes = in.Routes[4:]
	in.Services = in.Services[:1]
	if _, err := d.Configure(in); err != nil {
		t.Fatal(err)
	}
	for i := range MaxRoutesPerVIP + 1 {
		got, err := d.Explain(flowFrame(protoTCP, src, netip.AddrPortFrom(testVIP4, uint16(1000+i))))
		if err != nil {
			t.Fatal(err)
		}
		want, route := StatusDecided, i
		if i >= MaxRoutesPerVIP-1 {
			want, route = StatusPuntLimit, MaxRoutesPerVIP-1
		}
		if got.Status != want || got.Route != route {
			t.Errorf("TCP to port %d: %v at route %d, want %v at route %d", 1000+i, got.Status, got.Route, want, route)
		}
	}
	// The VIP beyond MaxVIPs (2000::1 sorts after 20.0.0.1) is no VIP of
	// the program's.
	got, err := d.Explain(flowFrame(protoTCP, netip.AddrPortFrom(netip.MustParseAddr("fd00::1"), 5), netip.AddrPortFrom(testVIP6, 80)))
	if err != nil || got.Status != StatusPuntNotVIP {
		t.Errorf("TCP to %v: %+v, %v; want %v", testVIP6, got, err, StatusPuntNotVIP)
	}
}

// TestIntegrationConfigureSwapsWhole: a changed table or route set is a new
// inner map swapped in (its id changes), an unchanged one is left alone,
// and a removed Service's table and VIP's route set are gone.
func TestIntegrationConfigureSwapsWhole(t *testing.T) {
	require.Root(t)
	d := load(t, Options{})
	inner := func(m interface{ Lookup(any, any) error }, key any) uint32 {
		t.Helper()
		var id uint32
		if err := m.Lookup(key, &id); err != nil {
			t.Fatalf("looking up %v: %v", key, err)
		}
		return id
	}
	a := oneService(service{buildTable(t, 251, 10, 1), false})
	if _, err := d.Configure(a); err != nil {
		t.Fatal(err)
	}
	v4, v6 := vipKeyOf(testVIP4), vipKeyOf(testVIP6)
	t4, t6 := inner(d.objs.MaglevTables, tableKey(0, 4)), inner(d.objs.MaglevTables, tableKey(0, 6))
	r4, r6 := inner(d.objs.VipRoutes, v4), inner(d.objs.VipRoutes, v6)

	// New IPv4 table (other slots active); the IPv6 one and the route sets
	// stay.
	b := a
	b.Services = []fastpath.Service{a.Services[0]}
	b.Services[0].IPv4 = buildTable(t, 251, 10, 2).AppendEntrySlots(nil)
	rep, err := d.Configure(b)
	if err != nil {
		t.Fatal(err)
	}
	if rep.TablesWritten != 1 || rep.RouteSetsWritten != 0 {
		t.Errorf("report %+v, want one table written", rep)
	}
	if got := inner(d.objs.MaglevTables, tableKey(0, 4)); got == t4 {
		t.Errorf("the IPv4 table is still map %d", got)
	}
	if inner(d.objs.MaglevTables, tableKey(0, 6)) != t6 || inner(d.objs.VipRoutes, v4) != r4 || inner(d.objs.VipRoutes, v6) != r6 {
		t.Error("an unchanged table or route set was replaced")
	}
	for port := range uint16(200) {
		got, err := d.Explain(flowFrame(protoTCP, netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), port), netip.AddrPortFrom(testVIP4, 80)))
		if err != nil || got.Status != StatusDecided || got.Slot%2 != 0 {
			t.Fatalf("source port %d: %+v, %v; want a slot of the new table (even)", port, got, err)
		}
	}

	// The IPv4 route set changes (UDP only); then the Service goes.
	c := b
	c.Routes = append([]model.Route(nil), b.Routes...)
	c.Routes[0].Destinations = c.Routes[0].Destinations[:1]
	c.Routes[0].Protocols = []model.Protocol{model.ProtoUDP}
	if rep, err := d.Configure(c); err != nil || rep.RouteSetsWritten != 1 || rep.VIPs != 1 {
		t.Fatalf("report %+v, %v; want one route set written, one VIP", rep, err)
	}
	if got := inner(d.objs.VipRoutes, v4); got == r4 {
		t.Errorf("the IPv4 route set is still map %d", got)
	}
	got, err := d.Explain(flowFrame(protoTCP, netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), 1), netip.AddrPortFrom(testVIP4, 80)))
	if err != nil || got.Status != StatusPuntNoRoute {
		t.Errorf("TCP after the route lost it: %+v, %v; want %v", got, err, StatusPuntNoRoute)
	}
	c.Services = nil
	if rep, err := d.Configure(c); err != nil || rep.Tables != 0 {
		t.Fatalf("report %+v, %v; want no table", rep, err)
	}
	got, err = d.Explain(flowFrame(protoUDP, netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), 1), netip.AddrPortFrom(testVIP4, 80)))
	if err != nil || got.Status != StatusPuntNoEndpoint || got.Route != 0 || got.Hash != 0 {
		t.Errorf("UDP to a route without its Service: %+v, %v; want %v at route 0, no hash", got, err, StatusPuntNoEndpoint)
	}
}

// TestIntegrationConfigureNoWindow decides packets while Configure swaps a
// Service's tables back and forth between two of different sizes (M 16381
// and 32749) and active slots: every result must be the whole of one
// table's answer. A table rewritten in place would, meanwhile, pair one
// table's M with the other's entries.
func TestIntegrationConfigureNoWindow(t *testing.T) {
	require.Root(t)
	d := load(t, Options{})
	svcs := [2]service{{buildTable(t, 16381, 50, 1), false}, {buildTable(t, 32749, 50, 3), false}}
	g := frameGen{rand.New(rand.NewPCG(25, 4))}
	type probe struct {
		frame []byte
		want  [2]Result
	}
	var probes []probe
	for len(probes) < 200 {
		f := g.decidable().frame
		a, okA := expect(f, svcs[0])
		b, okB := expect(f, svcs[1])
		if okA && okB && a.Status == StatusDecided && a != b {
			probes = append(probes, probe{f, [2]Result{a, b}})
		}
	}
	if _, err := d.Configure(oneService(svcs[0])); err != nil {
		t.Fatal(err)
	}
	const swaps = 40
	done := make(chan struct{})
	type seen struct {
		byTable [2]int
		err     error
	}
	res := make(chan seen)
	go func() {
		var s seen
		for i := 0; ; i++ {
			select {
			case <-done:
				res <- s
				return
			default:
			}
			p := probes[i%len(probes)]
			got, err := d.Explain(p.frame)
			switch {
			case err != nil:
				s.err = err
			case got == p.want[0]:
				s.byTable[0]++
			case got == p.want[1]:
				s.byTable[1]++
			default:
				s.err = fmt.Errorf("frame %x: %+v, neither table's answer %+v nor %+v", p.frame, got, p.want[0], p.want[1])
			}
			if s.err != nil {
				res <- s
				return
			}
		}
	}()
	start := time.Now()
	var s seen
	for i := range swaps {
		if _, err := d.Configure(oneService(svcs[(i+1)%2])); err != nil {
			t.Fatal(err)
		}
		select {
		case s = <-res:
			t.Fatal(s.err)
		default:
		}
	}
	close(done)
	s = <-res
	if s.err != nil {
		t.Fatal(s.err)
	}
	t.Logf("%d swaps in %v; %d packets decided meanwhile, %d by the first table, %d by the second, none by a mixture",
		swaps, time.Since(start).Round(time.Millisecond), s.byTable[0]+s.byTable[1], s.byTable[0], s.byTable[1])
	if s.byTable[0] == 0 || s.byTable[1] == 0 {
		t.Errorf("packets ran against one table only (%v): the test saw no swap", s.byTable)
	}
}

// TestIndexes: a Service keeps its index; a new one takes the lowest index
// no programmed Service holds, removed ones included (their indexes are
// free only after the Configure that removes them, so a route set written
// meanwhile never names another Service's table); beyond MaxServices, none.
func TestIndexes(t *testing.T) {
	d := &Datapath{maxServices: 4, services: map[string]uint32{"gone": 0, "kept": 2}}
	in := []fastpath.Service{{Name: "new-1"}, {Name: "kept"}, {Name: "new-2"}, {Name: "new-3"}}
	index, overflow := d.indexes(in)
	want := map[string]uint32{"new-1": 1, "kept": 2, "new-2": 3}
	if fmt.Sprint(index) != fmt.Sprint(want) || len(overflow) != 1 || overflow[0] != "new-3" {
		t.Errorf("indexes %v, overflow %v; want %v and [new-3]", index, overflow, want)
	}
}

// TestRouteCounterIDs: a route keeps its counter; a new one gets the
// lowest index no route programmed now holds, and none beyond MaxRoutes.
func TestRouteCounterIDs(t *testing.T) {
	d := &Datapath{maxRoutes: 3, routeIDs: map[fastpath.RouteLabels]uint16{{Route: "gone", Service: "s"}: 0, {Route: "kept", Service: "s"}: 2}}
	var in []model.Route
	for _, n := range []string{"new-1", "kept", "new-2", "new-1"} {
		in = append(in, model.Route{Name: n, Service: "s"})
	}
	ids, fresh := d.routeCounterIDs(in)
	want := map[fastpath.RouteLabels]uint16{{Route: "new-1", Service: "s"}: 1, {Route: "kept", Service: "s"}: 2}
	if fmt.Sprint(ids) != fmt.Sprint(want) || fmt.Sprint(fresh) != "[1]" {
		t.Errorf("ids %v, fresh %v; want %v and [1]", ids, fresh, want)
	}
}

// TestConfigureRefusesBeforeWriting: an input the kernel path could not
// compile either fails with nothing written (the Datapath here has no
// maps: a write would panic).
func TestConfigureRefusesBeforeWriting(t *testing.T) {
	d := &Datapath{maxServices: 4, maxVIPs: 4, services: map[string]uint32{}, tables: map[uint32][]ingressTableEntry{}, vips: map[netip.Addr]*vipRoutes{}}
	twice := oneService(service{buildTable(t, 7, 2, 1), false})
	twice.Services = append(twice.Services, twice.Services[0])
	noMark := oneService(service{buildTable(t, 7, 2, 1), false})
	noMark.Services[0].Endpoints = noMark.Services[0].Endpoints[1:]
	for name, tc := range map[string]struct {
		in   fastpath.Input
		want string
	}{
		"a Service twice":             {twice, "service svc: named twice"},
		"an entry's slot has no mark": {noMark, "belongs to slot 0, which has no endpoint"},
	} {
		if _, err := d.Configure(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
	}
}
