package nft

import (
	"net/netip"
	"testing"

	"github.com/google/nftables"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// BenchmarkProgramVIPUpdate measures one incremental Program (replace the
// elements of the VIP sets, one transaction) with 1000 IPv4 and 1000 IPv6
// VIPs, in a fresh namespace.
func BenchmarkProgramVIPUpdate(b *testing.B) {
	require.Root(b)
	_, fd := netns.New(b, "sllbrd-k-nft")
	conn, err := nftables.New(nftables.WithNetNSFd(fd))
	if err != nil {
		b.Fatal(err)
	}
	p, err := New(conn)
	if err != nil {
		b.Fatal(err)
	}
	var cfgs [2]Config
	for i := range cfgs {
		cfgs[i].Queues = QueueRange{First: 0, Count: 4}
		for j := range 1000 {
			v4 := netip.AddrFrom4([4]byte{20, byte(i), byte(j >> 8), byte(j)})
			v6 := netip.AddrFrom16([16]byte{0x20, 0, byte(i), 0, 14: byte(j >> 8), 15: byte(j)})
			cfgs[i].VIPs = append(cfgs[i].VIPs, v4, v6)
		}
	}
	if err := p.Program(cfgs[0]); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := p.Program(cfgs[i%2]); err != nil {
			b.Fatal(err)
		}
	}
}
