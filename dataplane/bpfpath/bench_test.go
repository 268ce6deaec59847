package bpfpath

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

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
