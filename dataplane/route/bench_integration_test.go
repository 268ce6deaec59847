package route

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// benchEndpoints are n endpoints of each family on l0 (10.1.0.0/16,
// fd01::/64), marks and tables from the first of DefaultRanges.
func benchEndpoints(n int) []EndpointRoute {
	out := make([]EndpointRoute, 0, 2*n)
	for i := range n {
		host := 10 + i
		v4 := netip.AddrFrom4([4]byte{10, 1, byte(host >> 8), byte(host)})
		v6 := netip.AddrFrom16([16]byte{0xfd, 0x01, 14: byte(host >> 8), 15: byte(host)})
		mark := DefaultRanges.Marks.Value + uint32(i)
		out = append(out, EndpointRoute{Mark: mark, Table: mark, Via: v4, Interface: "l0"},
			EndpointRoute{Mark: mark, Table: mark, Via: v6, Interface: "l0"})
	}
	return out
}

// BenchmarkReconcile measures one Add and Prune of N endpoints (both
// families) and a return path on the real kernel: with nothing to change
// (steady, what an Apply that changes no route pays, e.g. an endpoint
// that stops being ready and keeps its route), and with one endpoint's
// gateway alternating between two addresses (one route replaced, one
// neighbour flushed).
func BenchmarkReconcile(b *testing.B) {
	for _, n := range []int{3, 32, 1000} {
		for _, change := range []bool{false, true} {
			name := fmt.Sprintf("N=%d/steady", n)
			if change {
				name = fmt.Sprintf("N=%d/one-gateway", n)
			}
			b.Run(name, func(b *testing.B) { benchReconcile(b, n, change) })
		}
	}
}

func benchReconcile(b *testing.B, n int, change bool) {
	require.Root(b)
	require.Programs(b, "ip")
	ns, fd := netns.New(b, "sllbrd-k-rtb")
	for _, c := range []string{"link add l0 type veth peer name p0", "addr add 10.1.0.1/16 dev l0",
		"addr add fd01::1/64 dev l0 nodad", "link set l0 up", "link set p0 up",
		"link add l1 type veth peer name p1", "addr add 10.2.0.1/24 dev l1", "link set l1 up", "link set p1 up"} {
		netns.Run(b, append([]string{"ip", "-n", ns}, strings.Fields(c)...)...)
	}
	k, err := NewNetlinkKernel(fd)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Close() })
	rc, err := New(k)
	if err != nil {
		b.Fatal(err)
	}
	eps := benchEndpoints(n)
	paths := []ReturnPath{{VIPs: addrs("20.0.0.1", "2000::1"), Table: DefaultRanges.Tables.Max,
		Gateways: []Nexthop{gw("10.2.0.254", "l1"), gw("10.2.0.253", "l1")}}}
	if err := reconcile(rc, eps, paths); err != nil {
		b.Fatal(err)
	}
	vias := []netip.Addr{eps[0].Via, netip.MustParseAddr("10.1.255.1")}
	for i := 0; b.Loop(); i++ {
		if change {
			eps[0].Via = vias[(i+1)%2]
		}
		if err := reconcile(rc, eps, paths); err != nil {
			b.Fatal(err)
		}
	}
}
