package dataplane

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
	"github.com/sllbrd/sllbrd/model"
)

// differentialState has two Services (svc-a hashes SCTP on ports only,
// svc-b on the five-tuple) and routes that use every match: ports, port
// sets, protocols, source CIDRs (one and several), byte matches,
// priorities.
func differentialState() *model.State {
	endpoints := func(n int) []model.Endpoint {
		var eps []model.Endpoint
		for id := range n {
			eps = append(eps, model.Endpoint{ID: id, Ready: true, Addr: netip.AddrFrom4([4]byte{169, 111, 100, byte(10 + id)})},
				model.Endpoint{ID: id, Ready: true, Addr: netip.AddrFrom16([16]byte{0xfd, 0, 1, 0x11, 15: byte(10 + id)})})
		}
		return eps
	}
	vips := []netip.Prefix{netip.PrefixFrom(labVIP4, 32), netip.PrefixFrom(labVIP6, 128)}
	tcp, udp, sctp := model.ProtoTCP, model.ProtoUDP, model.ProtoSCTP
	port := func(from, to uint16) model.PortRange { return model.PortRange{From: from, To: to} }
	route := func(name, svc string, prio int32, protos []model.Protocol, dports ...model.PortRange) model.Route {
		return model.Route{Name: "default/" + name, Service: svc, Priority: prio, Destinations: vips, Protocols: protos, DestinationPorts: dports}
	}
	bytes := route("bytes-hit", "svc-b", 20, []model.Protocol{udp}, port(7000, 7000))
	bytes.ByteMatches = []model.ByteMatch{{Protocol: udp, Offset: 8, Size: 1, Mask: 0xff, Value: 'h'}}
	sources := route("from-client", "svc-b", 20, []model.Protocol{udp}, port(8000, 8000))
	sources.Sources = []netip.Prefix{netip.MustParsePrefix("10.99.0.0/24"), netip.MustParsePrefix("192.0.2.0/24"),
		netip.MustParsePrefix("fd99::/64")}
	sports := route("sports", "svc-b", 20, []model.Protocol{tcp}, port(9000, 9000))
	sports.SourcePorts = []model.PortRange{port(20000, 20049), port(20100, 20149)}
	return &model.State{
		Generation: 1,
		Services: []model.Service{
			{Name: "svc-a", MaxEndpoints: 32, SCTPHashPorts: true, Endpoints: endpoints(10)},
			{Name: "svc-b", MaxEndpoints: 8, Endpoints: endpoints(3)},
		},
		Routes: []model.Route{
			route("web", "svc-a", 10, []model.Protocol{tcp, udp, sctp}, port(80, 80), port(5000, 5010)),
			route("sctp-five-tuple", "svc-b", 10, []model.Protocol{sctp}, port(6000, 6000)),
			bytes, route("udp-7000", "svc-a", 10, []model.Protocol{udp}, port(7000, 7000)),
			sources, route("udp-8000", "svc-a", 10, []model.Protocol{udp}, port(8000, 8000)),
			sports, route("tcp-9000", "svc-a", 10, []model.Protocol{tcp}, port(9000, 9000)),
		},
	}
}

// testFlow is one client flow to a VIP.
type testFlow struct {
	flow    testpkt.Flow
	payload []byte
}

// differentialFlows are the test's flows of one family: each has its own
// source port, so the recorder tells them apart.
func differentialFlows(vip netip.Addr) []testFlow {
	client := labClient4
	if vip.Is6() {
		client = labClient6
	}
	var out []testFlow
	add := func(proto uint8, sport, dport uint16, payload string) {
		out = append(out, testFlow{testpkt.Flow{Src: client, Dst: vip, Proto: proto, SrcPort: sport, DstPort: dport}, []byte(payload)})
	}
	for i := range 200 {
		add(6, uint16(20000+i), 9000, "hello") // half in the sports route's source ports
	}
	sport := uint16(21000)
	for _, k := range []struct {
		proto   uint8
		dport   uint16
		payload string
	}{{6, 80, "hello"}, {17, 80, "hello"}, {132, 80, "hello"}, {17, 5005, "hello"}, {132, 6000, "hello"},
		{17, 7000, "hello"}, {17, 7000, "xyz"}, {17, 8000, "hello"}} {
		for range 60 {
			add(k.proto, sport, k.dport, k.payload)
			sport++
		}
	}
	return out
}

// TestIntegrationKernelPathAgreesWithUserspace is the differential test of
// the two dataplane paths on the real kernel: the same flows (IPv4 and
// IPv6; TCP, UDP, SCTP hashed on the five-tuple and on ports only; ICMP
// echo) get from the kernel path's rules exactly the mark the userspace
// decision (Engine.Decide) gives them; their first fragments and the ICMP
// errors quoting them, which go through nfqueue and the engine, get that
// same mark; and nothing but fragments and errors reaches the queue.
func TestIntegrationKernelPathAgreesWithUserspace(t *testing.T) {
	l := newKernelLab(t)
	applied := l.apply(t, differentialState())
	if len(applied.Userspace) != 0 {
		t.Fatalf("the kernel path leaves routes to userspace: %v", applied.Userspace)
	}
	d := NewDecision()
	want := map[string]uint32{} // recorder key -> the userspace decision's mark
	var whole, frags, errs, echoes [][]byte
	for _, vip := range []netip.Addr{labVIP4, labVIP6} {
		for i, f := range differentialFlows(vip) {
			p := testpkt.Packet(f.flow, f.payload, testpkt.Options{})
			l.engine.Decide(p, len(p), 0, d)
			if d.Verdict != Accept {
				t.Fatalf("%+v: userspace decides %v (%v)", f.flow, d.Verdict, d.Reason)
			}
			want[flowKey(vip, f.flow.Proto, f.flow.SrcPort)] = d.Mark
			whole = append(whole, p)
			if f.flow.DstPort == 80 && f.flow.Proto == 17 && i%2 == 0 {
				frags = append(frags, testpkt.Fragments(f.flow, make([]byte, 64), 32, uint32(1000+i))...)
			}
			if f.flow.DstPort == 80 || f.flow.DstPort == 6000 {
				errs = append(errs, quotingError(f, len(errs)))
			}
		}
		for id := uint16(1); id <= 60; id++ {
			p := testpkt.Echo(clientOf(vip), vip, id, 1)
			l.engine.Decide(p, len(p), 0, d)
			want[flowKey(vip, 0, id)+" echo"] = d.Mark
			echoes = append(echoes, p)
		}
	}
	l.send(t, append(whole, echoes...))
	kernel := map[string]uint32{}
	for _, r := range l.waitRecords(t, "flows", len(whole)) {
		kernel[flowKey(family(r.family), r.proto, r.tag)] = r.mark
	}
	for _, r := range l.waitRecords(t, "echo", len(echoes)) {
		kernel[flowKey(family(r.family), 0, r.tag)+" echo"] = r.mark
	}
	marks := map[uint32]int{}
	for key, mark := range want {
		if got, ok := kernel[key]; !ok || got != mark {
			t.Errorf("%s: the kernel path set mark %#x (recorded %v), userspace decides %#x", key, got, ok, mark)
		}
		marks[mark]++
	}
	if len(marks) < 10 {
		t.Errorf("the flows reached %d marks, want the 13 endpoints' (spread %v)", len(marks), marks)
	}
	if queued := l.queues.Stats().Packets; queued != 0 {
		t.Errorf("%d whole packets or echoes went to the queue, want none", queued)
	}

	// First fragments and ICMP errors go through the queue and the engine.
	l.send(t, append(frags, errs...))
	checkErrors(t, l, errs, kernel)
	wantQueued := uint64(len(frags) + len(errs))
	for deadline := time.Now().Add(10 * time.Second); l.queues.Stats().Accepted < wantQueued && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if got := l.queues.Stats(); got.Packets != wantQueued || got.Accepted != wantQueued {
		t.Errorf("the queue saw %d packets and accepted %d, want the %d fragments and errors", got.Packets, got.Accepted, wantQueued)
	}
	// A first fragment with another mark than its flow's packets would be
	// a second element for the flow.
	for _, r := range l.records(t, "flows") {
		key := flowKey(family(r.family), r.proto, r.tag)
		if r.mark != kernel[key] {
			t.Errorf("%s: a first fragment got mark %#x, the flow's packets %#x", key, r.mark, kernel[key])
		}
	}
	checkKernelCounters(t, l, len(whole)+len(echoes))
}

func clientOf(vip netip.Addr) netip.Addr {
	if vip.Is4() {
		return labClient4
	}
	return labClient6
}

func family(f uint8) netip.Addr {
	if f == 4 {
		return labVIP4
	}
	return labVIP6
}

func flowKey(vip netip.Addr, proto uint8, tag uint16) string {
	fam := 4
	if vip.Is6() {
		fam = 6
	}
	if proto == 1 || proto == 58 {
		proto = 0
	}
	return fmt.Sprintf("IPv%d proto %d port %d", fam, proto, tag)
}

// quotingError is the i-th ICMP error: a router (hostAddr(i)) tells the VIP
// that the target's reply of flow f did not fit the path.
func quotingError(f testFlow, i int) []byte {
	reply := testpkt.Packet(f.flow.Reverse(), make([]byte, 1400), testpkt.Options{})
	if f.flow.Dst.Is4() {
		return testpkt.ICMPError(hostAddr(false, i), reply, testpkt.ICMPv4Unreachable, testpkt.ICMPv4FragNeeded, 1300)
	}
	return testpkt.ICMPError(hostAddr(true, i), reply, testpkt.ICMPv6PacketTooBig, 0, 1300)
}

// checkErrors: each ICMP error got the mark of the flow it quotes.
func checkErrors(t *testing.T, l *kernelLab, errs [][]byte, kernel map[string]uint32) {
	t.Helper()
	bySource := map[netip.Addr]uint32{}
	n4 := 0
	for _, e := range errs {
		if e[0]>>4 == 4 {
			n4++
		}
	}
	for _, set := range []struct {
		name string
		n    int
	}{{"errors4", n4}, {"errors6", len(errs) - n4}} {
		for _, r := range l.waitRecords(t, set.name, set.n) {
			bySource[r.src] = r.mark
		}
	}
	for i, e := range errs {
		six := e[0]>>4 == 6
		src := hostAddr(six, i)
		// The quoted reply runs VIP:dport -> client:sport; its flow is the
		// client's, whose source port is the quoted destination port.
		inner := e[28:]
		if six {
			inner = e[48:]
		}
		hdr := 20
		if six {
			hdr = 40
		}
		proto := inner[9]
		if six {
			proto = inner[6]
		}
		sport := uint16(inner[hdr+2])<<8 | uint16(inner[hdr+3])
		vip := labVIP4
		if six {
			vip = labVIP6
		}
		key := flowKey(vip, proto, sport)
		if got, ok := bySource[src]; !ok || got != kernel[key] {
			t.Errorf("ICMP error from %v quoting %s: mark %#x (recorded %v), the flow's %#x", src, key, got, ok, kernel[key])
		}
	}
}

// checkKernelCounters: the routes' and the endpoints' counter objects each
// count every packet the kernel decided.
func checkKernelCounters(t *testing.T, l *kernelLab, decided int) {
	t.Helper()
	counts, err := nft.ReadCounters(l.conn, nft.DefaultTableName)
	if err != nil {
		t.Fatal(err)
	}
	prog := l.prog.kernel.programmed.Load()
	var routes, endpoints uint64
	for name, c := range counts {
		if _, ok := prog.RouteCounters[name]; ok {
			routes += c.Packets
		}
		if _, ok := prog.EndpointCounters[name]; ok {
			endpoints += c.Packets
		}
	}
	if routes != uint64(decided) || endpoints != uint64(decided) {
		t.Errorf("kernel counters: routes %d, endpoints %d packets; the kernel decided %d", routes, endpoints, decided)
	}
}
