package bpfpath

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/model"
)

// BenchmarkProgram measures the program's run time per packet in the
// kernel (BPF_PROG_TEST_RUN's repeat, which reports the mean), for a VIP
// whose first route matches, and one whose packet matches only the last of
// MaxRoutesPerVIP routes each with MaxSourceCIDRs sources (the longest
// walk), for TCP in IPv4 and IPv6. It reports ns/packet as the metric.
func BenchmarkProgram(b *testing.B) {
	require.Root(b)
	d := load(b, Options{})
	in := oneService(service{buildTable(b, 16381, 100, 1), false})
	walk4, walk6 := netip.MustParseAddr("20.0.0.9"), netip.MustParseAddr("2000::9")
	for i := range MaxRoutesPerVIP {
		r := model.Route{Name: fmt.Sprintf("ns/walk%02d", i), Service: "svc", Priority: 1,
			Destinations: []netip.Prefix{netip.PrefixFrom(walk4, 32), netip.PrefixFrom(walk6, 128)},
			Protocols:    []model.Protocol{model.ProtoTCP}}
		for j := range MaxSourceCIDRs {
			last := byte(0)
			if i == MaxRoutesPerVIP-1 && j == MaxSourceCIDRs-1 {
				last = 1 // only the last CIDR of the last route admits the source
			}
			r.Sources = append(r.Sources, netip.PrefixFrom(netip.AddrFrom4([4]byte{11, last, byte(j), 0}), 24),
				netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 1, last, byte(j)}), 64))
		}
		in.Routes = append(in.Routes, r)
	}
	if _, err := d.Configure(in); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		src, dst netip.Addr
		route    int
	}{
		{"first-route/ipv4", netip.MustParseAddr("11.1.7.1"), testVIP4, 0},
		{"first-route/ipv6", netip.MustParseAddr("fd01:107::1"), testVIP6, 0},
		{"last-of-16-routes/ipv4", netip.MustParseAddr("11.1.7.1"), walk4, MaxRoutesPerVIP},
		{"last-of-16-routes/ipv6", netip.MustParseAddr("fd01:107::1"), walk6, MaxRoutesPerVIP},
	} {
		b.Run(tc.name, func(b *testing.B) {
			frame := flowFrame(protoTCP, netip.AddrPortFrom(tc.src, 40000), netip.AddrPortFrom(tc.dst, 443))
			if got, err := d.Explain(frame); err != nil || got.Status != StatusDecided || got.Route != tc.route {
				b.Fatalf("%+v, %v: want decided by route %d", got, err, tc.route)
			}
			var total time.Duration
			for b.Loop() {
				_, per, err := d.Program().Benchmark(frame, 10000, nil)
				if err != nil {
					b.Fatal(err)
				}
				total += per
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/packet")
		})
	}
}

// BenchmarkAct measures what acting on a decision adds, per packet, for a
// UDP packet in IPv4 decided by its VIP's first route: "report" is
// Explain's run (no ingress device: decide and report only), "mark" a run
// as on a link whose endpoint has no next hop (mark, count), "redirect"
// one whose endpoint has one (mark, count, TTL and checksum, redirect),
// "xdp-redirect" the XDP program's redirect.
// BPF_PROG_TEST_RUN's repeat reuses one skb, so a redirect run is at most
// 200 repeats from TTL 255 (each takes one off); the metric is the wall
// time of the repeats over their number, which includes a share of the
// system call (under 10 ns at 200).
func BenchmarkAct(b *testing.B) {
	require.Root(b)
	d := load(b, Options{})
	svc := service{buildTable(b, 16381, 100, 1), false}
	if _, err := d.Configure(oneService(svc)); err != nil {
		b.Fatal(err)
	}
	src := netip.AddrPortFrom(netip.MustParseAddr("11.1.7.1"), 40000)
	frame := hostFrame(src, netip.AddrPortFrom(testVIP4, 53), 255, 1, 0)
	want, _ := expect(frame, svc)
	for _, tc := range []struct {
		name    string
		ifindex uint32
		hop     bool
		verdict int32
	}{{"report", 0, false, -1}, {"mark", 1, false, -1}, {"redirect", 1, true, tcActRedirect}} {
		b.Run(tc.name, func(b *testing.B) {
			var hops []NextHop
			if tc.hop {
				hops = []NextHop{{Mark: want.Mark, Via: netip.MustParseAddr("10.9.0.1"), Ifindex: 7, MTU: 1500}}
			}
			if err := d.SetNextHops(hops); err != nil {
				b.Fatal(err)
			}
			const repeat = 200
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				ret, err := d.objs.SllbrdIngress.Run(&ebpf.RunOptions{Data: frame, Context: skbContext{IngressIfindex: tc.ifindex}, Repeat: repeat})
				total += time.Since(start)
				if err != nil || int32(ret) != tc.verdict {
					b.Fatalf("verdict %d, %v; want %d", int32(ret), err, tc.verdict)
				}
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*repeat), "ns/packet")
		})
	}
	// The XDP program's redirect, as the kernel times its repeats
	// (BPF_PROG_TEST_RUN's duration: an XDP run also swaps the XDP
	// dispatcher's program in and out, which wall time would count):
	// decided, checked, rewritten (TTL, and the MACs, which name the test
	// run's device again, so that every repeat is addressed to it),
	// counted, redirected.
	b.Run("xdp-redirect", func(b *testing.B) {
		zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
		if err := d.SetNextHops([]NextHop{{Mark: want.Mark, Via: netip.MustParseAddr("10.9.0.1"), Ifindex: 7, MTU: 1500, MAC: zero, SrcMAC: zero}}); err != nil {
			b.Fatal(err)
		}
		if err := d.objs.XdpIfaces.Put(uint32(1), ingressXdpIface{Flags: xdpIfaceGeneric}); err != nil {
			b.Fatal(err)
		}
		const repeat = 200
		var total time.Duration
		for b.Loop() {
			ret, per, err := d.objs.SllbrdXdp.Benchmark(frame, repeat, nil)
			if err != nil || ret != xdpRedirect {
				b.Fatalf("verdict %d, %v; want %d", ret, err, xdpRedirect)
			}
			total += per
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/packet")
	})
}
