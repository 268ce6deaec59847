package dataplane

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
	"github.com/sllbrd/sllbrd/model"
)

var (
	genVIPs    = []netip.Addr{netip.MustParseAddr("20.0.0.1"), netip.MustParseAddr("20.0.0.2"), netip.MustParseAddr("2000::1"), netip.MustParseAddr("2000::2")}
	genSources = []netip.Addr{netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("192.0.2.9"),
		netip.MustParseAddr("fd00::7"), netip.MustParseAddr("fd00:1::3"), netip.MustParseAddr("2001:db8::9"), netip.MustParseAddr("::ffff:10.0.0.7")}
	genPrefixes = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("192.0.2.9/32"),
		netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("fd00::/16"), netip.MustParsePrefix("fd00:1::/32"), netip.MustParsePrefix("2001:db8::9/128"),
		netip.MustParsePrefix("::/0")}
	genProtos = []model.Protocol{model.ProtoTCP, model.ProtoUDP, model.ProtoSCTP}
)

// genState is a random configuration: Services with random slot counts,
// endpoints (some not ready, some of one family only) and routes with
// random destinations, priorities (often tied), protocols, port ranges,
// sources and byte matches, some of them beyond byteLimit.
func genState(r *rand.Rand, byteLimit int) *model.State {
	st := &model.State{Generation: 1}
	for s := range 1 + r.IntN(3) {
		svc := model.Service{Name: []string{"svc-a", "svc-b", "svc-c"}[s], MaxEndpoints: 1 + r.IntN(40), SCTPHashPorts: r.IntN(2) == 0}
		for id := range svc.MaxEndpoints {
			if r.IntN(3) == 0 {
				continue
			}
			ready := r.IntN(5) != 0
			if r.IntN(4) != 0 {
				svc.Endpoints = append(svc.Endpoints, model.Endpoint{ID: id, Ready: ready, Addr: netip.AddrFrom4([4]byte{169, 111, byte(s), byte(id)})})
			}
			if r.IntN(4) != 0 {
				svc.Endpoints = append(svc.Endpoints, model.Endpoint{ID: id, Ready: ready, Addr: netip.AddrFrom16([16]byte{0xfd, 0, 1, 0x11, 14: byte(s), 15: byte(id)})})
			}
		}
		st.Services = append(st.Services, svc)
	}
	for i := range 1 + r.IntN(8) {
		rt := model.Route{Name: "ns/r" + string(rune('a'+i)), Service: []string{"svc-a", "svc-b", "svc-c", "missing"}[r.IntN(4)],
			Priority: int32(1 + r.IntN(3))}
		for _, v := range genVIPs {
			if r.IntN(2) == 0 || (v == genVIPs[3] && len(rt.Destinations) == 0) {
				rt.Destinations = append(rt.Destinations, netip.PrefixFrom(v, v.BitLen()))
			}
		}
		for _, p := range genProtos {
			if r.IntN(2) == 0 || (p == model.ProtoSCTP && len(rt.Protocols) == 0) {
				rt.Protocols = append(rt.Protocols, p)
			}
		}
		rt.SourcePorts, rt.DestinationPorts = genPorts(r), genPorts(r)
		if r.IntN(3) == 0 {
			for _, p := range genPrefixes {
				if r.IntN(3) == 0 {
					rt.Sources = append(rt.Sources, p)
				}
			}
			rt.Sources = append(rt.Sources, genPrefixes[3+4*r.IntN(2)], genPrefixes[r.IntN(2)*4+r.IntN(3)]) // a source of each family, sometimes any
			if r.IntN(2) == 0 {
				rt.Sources = append(rt.Sources, genPrefixes[1], genPrefixes[5])
			}
		}
		for range r.IntN(3) / 2 {
			size := []uint8{1, 2, 4}[r.IntN(3)]
			off := uint16(r.IntN(12))
			if r.IntN(8) == 0 {
				off = uint16(byteLimit + 1)
			}
			mask := uint32(0xffffffff) >> (32 - 8*uint32(size))
			if r.IntN(2) == 0 {
				mask &= 0x0f0f0f0f
			}
			rt.ByteMatches = append(rt.ByteMatches, model.ByteMatch{Protocol: rt.Protocols[r.IntN(len(rt.Protocols))], Offset: off, Size: size,
				Mask: mask, Value: uint32(r.IntN(4)) & mask})
		}
		st.Routes = append(st.Routes, rt)
	}
	return st
}

func genPorts(r *rand.Rand) []model.PortRange {
	var out []model.PortRange
	if r.IntN(2) == 0 {
		return nil
	}
	for range 1 + r.IntN(2) {
		from := uint16(r.IntN(6)) * 1000
		out = append(out, model.PortRange{From: from, To: from + 50 + uint16(r.IntN(1500))})
	}
	if r.IntN(10) == 0 {
		out = append(out, model.PortRange{From: 64000, To: 65535})
	}
	return out
}

// genPacket is a random packet to a VIP: TCP, UDP, SCTP (ports near the
// routes', payload bytes the byte matches may hit), ICMP echo, an ICMP
// error, an IPv4 fragment, an IPv6 packet with extension headers, or a
// truncated one.
func genPacket(r *rand.Rand) []byte {
	vip := genVIPs[r.IntN(len(genVIPs))]
	var src netip.Addr
	for !src.IsValid() || src.Unmap().Is4() != vip.Is4() || (vip.Is4() && src.Is4In6()) {
		src = genSources[r.IntN(len(genSources))]
	}
	payload := make([]byte, r.IntN(16))
	for i := range payload {
		payload[i] = byte(r.IntN(4))
	}
	f := testpkt.Flow{Src: src, Dst: vip, Proto: uint8(genProtos[r.IntN(3)]),
		SrcPort: uint16(r.IntN(6))*1000 + uint16(r.IntN(100)), DstPort: uint16(r.IntN(6))*1000 + uint16(r.IntN(100))}
	switch r.IntN(12) {
	case 0:
		return testpkt.Echo(src, vip, uint16(r.Uint32()), 1)
	case 1:
		reply := testpkt.Packet(f.Reverse(), payload, testpkt.Options{})
		return testpkt.ICMPError(src, reply, []uint8{testpkt.ICMPv4Unreachable, testpkt.ICMPv6Unreachable}[boolInt(vip.Is6())], 0, 0)
	case 2:
		return testpkt.Fragments(f, make([]byte, 64), 32, r.Uint32())[0]
	case 3:
		return testpkt.Packet(f, payload, testpkt.Options{IPv6Ext: vip.Is6(), IPv4Options: vip.Is4()})
	case 4:
		p := testpkt.Packet(f, payload, testpkt.Options{})
		return truncateL4(p, r.IntN(4))
	}
	return testpkt.Packet(f, payload, testpkt.Options{})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// truncateL4 cuts p to n bytes of transport header, fixing the IP length.
func truncateL4(p []byte, n int) []byte {
	if p[0]>>4 == 4 {
		hl := int(p[0]&0xf) * 4
		p = p[:hl+n]
		p[2], p[3] = byte(len(p)>>8), byte(len(p))
		return p
	}
	p = p[:40+n]
	p[4], p[5] = 0, byte(n)
	return p
}

// checkKernelAgrees compiles st for the kernel path and runs packets
// through the model of the kernel and through Engine.Decide: a packet the
// kernel decides gets the mark the engine gives it, and a packet the
// engine balances (unfragmented, no IPv6 extension header, from a
// non-mapped source) is decided by the kernel too unless a route had to be
// left to userspace.
func checkKernelAgrees(t *testing.T, r *rand.Rand, st *model.State, byteLimit, packets int) (decidedByKernel int) {
	t.Helper()
	e := NewEngine()
	plan, err := e.Build(st)
	if err != nil {
		t.Fatal(err)
	}
	e.Commit(plan)
	prog := fastpath.Compile(plan.kernelInput(byteLimit))
	vm := newNFTVM(prog.Table)
	d := NewDecision()
	for range packets {
		b := genPacket(r)
		mark, decided, err := vm.run(b)
		if err != nil {
			t.Fatalf("kernel model: %v", err)
		}
		e.Decide(b, len(b), 0, d)
		p := d.Packet()
		if decided {
			decidedByKernel++
		}
		switch {
		case decided && (d.Verdict != Accept || d.Mark != mark):
			t.Fatalf("packet %x (%v %v:%d -> %v:%d): the kernel path sets mark %#x, userspace decides %v %#x (%v)\nroutes %+v",
				b, p.Kind, p.Src, p.SrcPort, p.Dst, p.DstPort, mark, d.Verdict, d.Mark, d.Reason, st.Routes)
		case !decided && d.Reason == ReasonBalanced && kernelShouldDecide(b, p) && len(prog.Userspace) == 0:
			t.Fatalf("packet %x (%v %v:%d -> %v:%d): userspace balances it to %#x, the kernel path queues it\nroutes %+v",
				b, p.Kind, p.Src, p.SrcPort, p.Dst, p.DstPort, d.Mark, st.Routes)
		}
	}
	return decidedByKernel
}

func kernelShouldDecide(b []byte, p *packet.Packet) bool {
	if p.Kind != packet.KindTransport && p.Kind != packet.KindICMPEcho {
		return false
	}
	if b[0]>>4 == 6 && (b[6] == 0 || b[6] == 60 || p.Src.Is4In6()) {
		return false
	}
	return true
}

func TestKernelPathAgreesWithUserspace(t *testing.T) {
	const configs, packets = 300, 300
	decided := 0
	for seed := range uint64(configs) {
		r := rand.New(rand.NewPCG(seed, 7))
		limit := []int{255, 65535}[seed%2]
		decided += checkKernelAgrees(t, r, genState(r, limit), limit, packets)
	}
	// The generator must exercise the kernel path, not only its fallback.
	t.Logf("the kernel path decided %d of %d packets", decided, configs*packets)
	if decided < configs*packets/20 {
		t.Errorf("the kernel path decided only %d of %d packets: the generator misses it", decided, configs*packets)
	}
}

// FuzzKernelPathAgrees is TestKernelPathAgreesWithUserspace over fuzzed
// seeds.
// Run: go test ./dataplane -run '^$' -fuzz FuzzKernelPathAgrees -fuzztime 60s
func FuzzKernelPathAgrees(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		r := rand.New(rand.NewPCG(a, b))
		_ = checkKernelAgrees(t, r, genState(r, 255), 255, 100)
	})
}
