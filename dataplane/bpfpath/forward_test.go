package bpfpath

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// tcActRedirect is TC_ACT_REDIRECT, bpf_redirect_neigh's verdict.
const tcActRedirect = 7

// hostFrame is an Ethernet frame of a UDP packet from src to dst with TTL
// (hop limit) ttl, addressed at layer 2 to BPF_PROG_TEST_RUN's device
// (the loopback device, whose address is zero: PACKET_HOST). An IPv4
// header has identification id, opts bytes of options (NOPs, a multiple
// of 4) and a valid checksum.
func hostFrame(src, dst netip.AddrPort, ttl uint8, id uint16, opts int) []byte {
	udp := make([]byte, 8, 8+16)
	binary.BigEndian.PutUint16(udp[0:], src.Port())
	binary.BigEndian.PutUint16(udp[2:], dst.Port())
	binary.BigEndian.PutUint16(udp[4:], 8+16)
	udp = append(udp, []byte("sllbrd-bpf-path!")...)
	var f []byte
	if src.Addr().Is4() {
		ip := make([]byte, 20+opts, 20+opts+len(udp))
		ip[0], ip[8], ip[9] = 0x40|byte((20+opts)/4), ttl, protoUDP
		binary.BigEndian.PutUint16(ip[2:], uint16(20+opts+len(udp)))
		binary.BigEndian.PutUint16(ip[4:], id)
		copy(ip[12:], src.Addr().AsSlice())
		copy(ip[16:], dst.Addr().AsSlice())
		for i := 20; i < 20+opts; i++ {
			ip[i] = 1 // NOP
		}
		binary.BigEndian.PutUint16(ip[10:], ipv4Checksum(ip[:20+opts]))
		f = ether(etherIPv4, append(ip, udp...), nil)
	} else {
		ip := make([]byte, 40, 40+len(udp))
		ip[0], ip[6], ip[7] = 0x60, protoUDP, ttl
		binary.BigEndian.PutUint16(ip[4:], uint16(len(udp)))
		copy(ip[8:], src.Addr().AsSlice())
		copy(ip[24:], dst.Addr().AsSlice())
		f = ether(etherIPv6, append(ip, udp...), nil)
	}
	clear(f[0:6])
	return f
}

// ipv4Checksum computes an IPv4 header's checksum from scratch (RFC 791,
// RFC 1071), its checksum field taken as zero.
func ipv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		if i != 10 {
			sum += uint32(binary.BigEndian.Uint16(h[i:]))
		}
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// linkRun is one run of the program as on a link: a packet with an
// ingress device, which the program acts on.
type linkRun struct {
	verdict int32
	frame   []byte // the frame after the program
	mark    uint32
	result  Result
}

func runOnLink(t testing.TB, d *Datapath, frame []byte) linkRun {
	t.Helper()
	return runOnLinkWith(t, d, frame, skbContext{IngressIfindex: 1})
}

// runOnLinkWith runs frame with the context in (an ingress device, and
// for a GSO skb its GSOSize and GSOSegs).
func runOnLinkWith(t testing.TB, d *Datapath, frame []byte, in skbContext) linkRun {
	t.Helper()
	var ctx skbContext
	opts := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+256), Context: in, ContextOut: &ctx}
	ret, err := d.objs.SllbrdIngress.Run(opts)
	if err != nil {
		t.Fatalf("BPF_PROG_TEST_RUN: %v", err)
	}
	return linkRun{verdict: int32(ret), frame: opts.DataOut, mark: ctx.Mark, result: ctx.result()}
}

// loadOneService loads the program and configures oneService with a
// table of M 251 and 10 slots.
func loadOneService(t *testing.T) (*Datapath, service) {
	t.Helper()
	d := load(t, Options{})
	svc := service{buildTable(t, 251, 10, 1), false}
	if _, err := d.Configure(oneService(svc)); err != nil {
		t.Fatal(err)
	}
	return d, svc
}

// forwardSetup loads and programs oneService (M 251, 10 slots) and gives
// every slot but 9 a next hop of each family.
func forwardSetup(t *testing.T) (*Datapath, service) {
	require.Root(t)
	d, svc := loadOneService(t)
	var hops []NextHop
	for slot := range 9 {
		hops = append(hops, NextHop{Mark: testMark(slot), Via: netip.AddrFrom4([4]byte{10, 9, 0, byte(slot)}), Ifindex: 7, MTU: 1500},
			NextHop{Mark: testMark(slot), Via: netip.AddrFrom16([16]byte{0xfd, 9, 15: byte(slot)}), Ifindex: 7, MTU: 1500})
	}
	if err := d.SetNextHops(hops); err != nil {
		t.Fatal(err)
	}
	return d, svc
}

// portToSlot9 returns a source port p whose packet frame(p) svc decides
// for slot 9 (toNine) or for another slot.
func portToSlot9(t *testing.T, svc service, toNine bool, frame func(p uint16) []byte) uint16 {
	t.Helper()
	for p := uint16(1000); p < 60000; p++ {
		if want, _ := expect(frame(p), svc); want.Status == StatusDecided && (want.Slot == 9) == toNine {
			return p
		}
	}
	t.Fatal("no such port")
	return 0
}

// TestIntegrationForwardRewrites: a decided packet whose endpoint has a
// next hop is redirected (TC_ACT_REDIRECT) with the endpoint's mark, its
// TTL or hop limit one less, an IPv4 header checksum equal to one computed
// from scratch, and not another byte changed; for random headers (IPv4
// options, identifications, TTLs 2 to 255), and for identifications that
// put the old checksum at the one's complement edges (0xfeff, 0xffxx,
// 0x00xx), where the incremental update carries.
func TestIntegrationForwardRewrites(t *testing.T) {
	d, svc := forwardSetup(t)
	rng := rand.New(rand.NewPCG(3, 4))
	src := func(fam int) netip.AddrPort {
		if fam == 4 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte{11, byte(rng.IntN(256)), byte(rng.IntN(256)), 1}), uint16(rng.Uint32()))
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte{0xfd, 11, 2: byte(rng.IntN(256)), 15: 1}), uint16(rng.Uint32()))
	}
	var frames [][]byte
	for range 2000 {
		fam := []int{4, 6}[rng.IntN(2)]
		dst := netip.AddrPortFrom(testVIP4, 53)
		if fam == 6 {
			dst = netip.AddrPortFrom(testVIP6, 53)
		}
		frames = append(frames, hostFrame(src(fam), dst, uint8(2+rng.IntN(254)), uint16(rng.Uint32()), 4*rng.IntN(11)))
	}
	edges := 0
	for id := range 1 << 16 {
		f := hostFrame(netip.AddrPortFrom(netip.MustParseAddr("11.0.0.1"), 999), netip.AddrPortFrom(testVIP4, 53), 64, uint16(id), 0)
		if c := binary.BigEndian.Uint16(f[24:]); c == 0xfeff || c >= 0xff00 || c < 0x0100 {
			frames, edges = append(frames, f), edges+1
		}
	}
	if edges < 3 {
		t.Fatalf("only %d frames at the checksum's edges", edges)
	}
	redirected := 0
	for _, in := range frames {
		want, _ := expect(in, svc)
		got := runOnLink(t, d, in)
		if got.result != want {
			t.Fatalf("result %+v, want %+v", got.result, want)
		}
		if want.Status != StatusDecided || want.Slot == 9 {
			continue // no next hop: TestIntegrationForwardHandsToStack
		}
		redirected++
		if got.verdict != tcActRedirect || got.mark != want.Mark {
			t.Fatalf("verdict %d, mark %#x; want %d (redirect) and %#x", got.verdict, got.mark, tcActRedirect, want.Mark)
		}
		exp := bytes.Clone(in)
		if in[12] == 0x08 {
			exp[14+8]--
			hlen := int(in[14]&0x0f) * 4
			binary.BigEndian.PutUint16(exp[14+10:], ipv4Checksum(exp[14:14+hlen]))
		} else {
			exp[14+7]--
		}
		if !bytes.Equal(got.frame, exp) {
			t.Fatalf("frame after the program\n%x\nwant (TTL/hop limit one less, checksum recomputed)\n%x", got.frame, exp)
		}
	}
	if redirected < len(frames)/2 {
		t.Fatalf("%d of %d frames redirected: the test checks too little", redirected, len(frames))
	}
	t.Logf("%d frames rewritten and redirected (%d at the checksum's edges)", redirected, edges)
}

// TestIntegrationForwardHandsToStack: what the program does not redirect
// goes to the stack (TC_ACT_UNSPEC) unchanged, byte for byte: a decided
// packet with TTL or hop limit 1 or 0 (its mark set: the stack's
// forwarding sends ICMP time exceeded), one whose endpoint has no next
// hop (its mark set: policy routing forwards it), one from a source the
// kernel never forwards from (marked), one not addressed to this host at
// layer 2, and punts (no mark).
func TestIntegrationForwardHandsToStack(t *testing.T) {
	d, svc := forwardSetup(t)
	src4, src6 := netip.MustParseAddr("11.0.0.1"), netip.MustParseAddr("fd0b::1")
	// A source port whose flow goes to slot 9 (no next hop), and one whose
	// flow goes elsewhere, in each family.
	port := func(src netip.Addr, vip netip.Addr, toNine bool) uint16 {
		return portToSlot9(t, svc, toNine, func(p uint16) []byte {
			return hostFrame(netip.AddrPortFrom(src, p), netip.AddrPortFrom(vip, 53), 64, 0, 0)
		})
	}
	type tc struct {
		name   string
		frame  []byte
		marked bool
	}
	var cases []tc
	for _, fam := range []struct {
		src, vip netip.Addr
		other    netip.Addr
	}{{src4, testVIP4, netip.MustParseAddr("20.0.0.2")}, {src6, testVIP6, netip.MustParseAddr("2000::2")}} {
		hop, none := port(fam.src, fam.vip, false), port(fam.src, fam.vip, true)
		at := func(p uint16) netip.AddrPort { return netip.AddrPortFrom(fam.src, p) }
		vip := netip.AddrPortFrom(fam.vip, 53)
		notHost := hostFrame(at(hop), vip, 64, 0, 0)
		notHost[0] = 2 // another host's MAC: PACKET_OTHERHOST
		cases = append(cases,
			tc{fam.vip.String() + " TTL 1", hostFrame(at(hop), vip, 1, 1, 0), true},
			tc{fam.vip.String() + " TTL 0", hostFrame(at(hop), vip, 0, 2, 8), true},
			tc{fam.vip.String() + " no next hop", hostFrame(at(none), vip, 64, 3, 0), true},
			tc{fam.vip.String() + " no next hop, TTL 1", hostFrame(at(none), vip, 1, 3, 0), true},
			tc{fam.vip.String() + " another host's MAC", notHost, false},
			tc{fam.vip.String() + " not a VIP", hostFrame(at(hop), netip.AddrPortFrom(fam.other, 53), 64, 4, 0), false},
		)
	}
	// Sources the kernel never forwards from go to the stack, marked; their
	// neighbours are forwarded.
	for _, m := range []string{"0.1.2.3", "127.0.0.1", "224.0.0.1", "239.255.255.255", "255.255.255.255",
		"::", "::1", "::ffff:1.2.3.4", "fe80::1", "febf::1", "ff02::1"} {
		src := netip.MustParseAddr(m)
		vip := netip.AddrPortFrom(testVIP4, 53)
		if src.Is6() {
			vip = netip.AddrPortFrom(testVIP6, 53)
		}
		cases = append(cases, tc{m + " (martian source)", hostFrame(netip.AddrPortFrom(src, port(src, vip.Addr(), false)), vip, 64, 5, 0), true})
	}
	for _, m := range []string{"1.0.0.0", "126.255.255.255", "128.0.0.1", "223.255.255.255", "240.0.0.1", "255.255.255.254",
		"::2", "::fffe:1.2.3.4", "fec0::1", "fe7f::1", "fd00::1"} {
		src := netip.MustParseAddr(m)
		vip := netip.AddrPortFrom(testVIP4, 53)
		if src.Is6() {
			vip = netip.AddrPortFrom(testVIP6, 53)
		}
		if got := runOnLink(t, d, hostFrame(netip.AddrPortFrom(src, port(src, vip.Addr(), false)), vip, 64, 5, 0)); got.verdict != tcActRedirect {
			t.Errorf("from %s: verdict %d, want %d (redirected: no martian source)", m, got.verdict, tcActRedirect)
		}
	}
	for _, c := range cases {
		want, _ := expect(c.frame, svc)
		got := runOnLink(t, d, c.frame)
		wantMark := uint32(0)
		if c.marked {
			wantMark = want.Mark
		}
		if got.verdict != -1 || got.mark != wantMark || got.result != want || !bytes.Equal(got.frame, c.frame) {
			t.Errorf("%s: verdict %d, mark %#x, result %+v, frame changed: %v; want -1 (TC_ACT_UNSPEC), mark %#x, %+v, unchanged",
				c.name, got.verdict, got.mark, got.result, !bytes.Equal(got.frame, c.frame), wantMark, want)
		}
	}
}

// TestIntegrationCounters: the route's, endpoints' and actions' counters
// count every packet the program acts on, with the bytes of its IP
// packet; Explain counts nothing; a Configure that keeps a route and an
// endpoint keeps their counts, one that removes them removes their
// counters, and a route that comes back starts from zero.
func TestIntegrationCounters(t *testing.T) {
	d, svc := forwardSetup(t)
	rng := rand.New(rand.NewPCG(5, 6))
	wantEP := map[fastpath.EndpointLabels]Count{}
	var wantRoute Count
	var wantActions [numActions]Count
	for i := range 3000 {
		fam := 4 + 2*rng.IntN(2)
		src, dst := netip.AddrFrom4([4]byte{11, 0, byte(i >> 8), byte(i)}), testVIP4
		if fam == 6 {
			src, dst = netip.AddrFrom16([16]byte{0xfd, 11, 14: byte(i >> 8), 15: byte(i)}), testVIP6
		}
		if rng.IntN(10) == 0 {
			dst = dst.Next() // not a VIP: a punt
		}
		ttl := uint8(64)
		if rng.IntN(10) == 0 {
			ttl = 1
		}
		frame := hostFrame(netip.AddrPortFrom(src, 4000), netip.AddrPortFrom(dst, 53), ttl, uint16(i), 4*rng.IntN(3))
		if _, err := d.Explain(frame); err != nil { // counts nothing
			t.Fatal(err)
		}
		got := runOnLink(t, d, frame)
		ipLen := uint64(len(frame) - 14)
		switch {
		case got.result.Status != StatusDecided:
			wantActions[ActionPunt].Packets++
			wantActions[ActionPunt].Bytes += ipLen
			continue
		case got.result.Slot == 9:
			wantActions[ActionMark].Packets++
			wantActions[ActionMark].Bytes += ipLen
		case ttl == 1:
			wantActions[ActionTTLExceeded].Packets++
			wantActions[ActionTTLExceeded].Bytes += ipLen
		default:
			wantActions[ActionRedirect].Packets++
			wantActions[ActionRedirect].Bytes += ipLen
		}
		wantRoute.Packets++
		wantRoute.Bytes += ipLen
		ep := fastpath.EndpointLabels{Service: "svc", ID: int(got.result.Slot), Addr: oneService(svc).Services[0].Endpoints[got.result.Slot].IPv4}
		if fam == 6 {
			ep.Addr = oneService(svc).Services[0].Endpoints[got.result.Slot].IPv6
		}
		c := wantEP[ep]
		c.Packets++
		c.Bytes += ipLen
		wantEP[ep] = c
	}
	counts, err := d.Counters()
	if err != nil {
		t.Fatal(err)
	}
	route := fastpath.RouteLabels{Route: "ns/all", Service: "svc"}
	if len(counts.Routes) != 1 || counts.Routes[route] != wantRoute {
		t.Errorf("route counters %v, want %v: %v", counts.Routes, route, wantRoute)
	}
	if len(counts.Endpoints) != 20 {
		t.Errorf("%d endpoint counters, want 20 (10 slots, 2 families)", len(counts.Endpoints))
	}
	for l, c := range counts.Endpoints {
		if c != wantEP[l] {
			t.Errorf("endpoint %+v: %+v, want %+v", l, c, wantEP[l])
		}
	}
	if counts.Actions != wantActions {
		t.Errorf("actions %+v, want %+v", counts.Actions, wantActions)
	}
	for _, a := range []Action{ActionPunt, ActionMark, ActionTTLExceeded, ActionRedirect} {
		if wantActions[a].Packets == 0 {
			t.Errorf("no packet of action %v: the test checks too little", a)
		}
	}

	// The same input again: the counts stay. Without the route and its
	// Service: their counters go. With them back: zero.
	if _, err := d.Configure(oneService(svc)); err != nil {
		t.Fatal(err)
	}
	if again, err := d.Counters(); err != nil || again.Routes[route] != wantRoute || len(again.Endpoints) != 20 {
		t.Errorf("after the same Configure: %+v, %v; want the route's %+v and 20 endpoints", again.Routes, err, wantRoute)
	}
	if _, err := d.Configure(fastpath.Input{}); err != nil {
		t.Fatal(err)
	}
	if gone, err := d.Counters(); err != nil || len(gone.Routes) != 0 || len(gone.Endpoints) != 0 {
		t.Errorf("after removing everything: %+v, %v; want no route or endpoint counters", gone, err)
	}
	if _, err := d.Configure(oneService(svc)); err != nil {
		t.Fatal(err)
	}
	back, err := d.Counters()
	if err != nil || len(back.Routes) != 1 || back.Routes[route] != (Count{}) || len(back.Endpoints) != 20 {
		t.Fatalf("back: %+v, %v; want the route and 20 endpoints at zero", back, err)
	}
	for l, c := range back.Endpoints {
		if c != (Count{}) {
			t.Errorf("back: endpoint %+v at %+v, want zero", l, c)
		}
	}
}

// TestIntegrationMaxRoutes: a route beyond Options.MaxRoutes has no
// counter and is punted at its place, so that no packet goes uncounted.
func TestIntegrationMaxRoutes(t *testing.T) {
	require.Root(t)
	d := load(t, Options{MaxRoutes: 1})
	in := limitsInput(t) // ns/cidrs (TCP 2000) is first, ns/r00 (TCP 1000) later
	rep, err := d.Configure(in)
	if err != nil {
		t.Fatal(err)
	}
	src := netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), 5)
	if got, err := d.Explain(flowFrame(protoTCP, src, netip.AddrPortFrom(testVIP4, 1000))); err != nil || got.Status != StatusPuntLimit {
		t.Errorf("a packet of a route beyond MaxRoutes: %+v, %v; want %v", got, err, StatusPuntLimit)
	}
	found := false
	for _, u := range rep.Userspace {
		found = found || bytes.Contains([]byte(u), []byte("beyond the 1 counted routes"))
	}
	if !found {
		t.Errorf("the report %q does not name the routes beyond MaxRoutes", rep.Userspace)
	}
}

// TestSetNextHopsRefuses: next hops that cannot be right fail before
// anything is written (the Datapath here has no maps: a write would
// panic).
func TestSetNextHopsRefuses(t *testing.T) {
	d := &Datapath{}
	via := netip.MustParseAddr("10.0.0.1")
	for name, tc := range map[string]struct {
		hops []NextHop
		want string
	}{
		"no address":           {[]NextHop{{Mark: 1, Ifindex: 2}}, "want a valid address"},
		"no interface":         {[]NextHop{{Mark: 1, Via: via}}, "interface index of at least 1"},
		"a negative MTU":       {[]NextHop{{Mark: 1, Via: via, Ifindex: 2, MTU: -1}}, "want an MTU of 0"},
		"a MAC of 5 bytes":     {[]NextHop{{Mark: 1, Via: via, Ifindex: 2, MAC: make(net.HardwareAddr, 5), SrcMAC: make(net.HardwareAddr, 6)}}, "both Ethernet addresses"},
		"a MAC, no SrcMAC":     {[]NextHop{{Mark: 1, Via: via, Ifindex: 2, MAC: make(net.HardwareAddr, 6)}}, "both Ethernet addresses"},
		"two of a mark/family": {[]NextHop{{Mark: 1, Via: via, Ifindex: 2}, {Mark: 1, Via: netip.MustParseAddr("::ffff:10.0.0.2"), Ifindex: 3}}, "two next hops of mark 0x1, IPv4"},
	} {
		if err := d.SetNextHops(tc.hops); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
	}
}
