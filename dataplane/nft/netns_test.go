package nft

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// listenUDP opens a UDP socket on addr inside ns, closed in t.Cleanup.
func listenUDP(t *testing.T, ns, network, addr string) net.PacketConn {
	t.Helper()
	var pc net.PacketConn
	netns.DoOrFail(t, ns, func() (err error) {
		pc, err = net.ListenPacket(network, addr)
		return err
	})
	t.Cleanup(func() { pc.Close() })
	return pc
}

// delivered sends count datagrams carrying tag from src to dst and reports
// how many with that tag reach dst within a bounded wait (200 ms after the
// last one); datagrams with other tags (late ones of earlier phases) are
// ignored.
func delivered(t *testing.T, src, dst net.PacketConn, to netip.AddrPort, count int, tag byte) int {
	t.Helper()
	for range count {
		if _, err := src.WriteTo([]byte{tag}, net.UDPAddrFromAddrPort(to)); err != nil {
			t.Fatalf("send to %s: %v", to, err)
		}
	}
	got := 0
	buf := make([]byte, 64)
	deadline := time.Now().Add(200 * time.Millisecond)
	for got < count {
		_ = dst.SetReadDeadline(deadline)
		n, _, err := dst.ReadFrom(buf)
		if err != nil {
			break
		}
		if n == 1 && buf[0] == tag {
			got++
		}
	}
	return got
}
