package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// TestIntegrationXDPSink installs a sink on t1's net1 and, from lb1 on the
// same bridge, checks that it drops and counts exactly the UDP datagrams
// sent to t1 in both families while ping (ARP, neighbour discovery, ICMP)
// still gets answers; that an interface without driver-mode XDP is an
// error; that Close detaches the sink and frees its program (UDP reaches a
// socket again); and that Lab.Close closes a sink left installed.
func TestIntegrationXDPSink(t *testing.T) {
	l := newTestLab(t, Options{LBs: 1, Targets: 1, NoResponders: true})
	ctx := context.Background()
	target, lb, addrs := l.Targets()[0], l.LBs()[0], TargetAddrs(1)
	sink, err := l.InstallXDPSink(target, TargetLink)
	if err != nil {
		t.Fatal(err)
	}
	id := sinkProgramID(t, sink)
	if out := linkDetails(t, l, target); !strings.Contains(out, fmt.Sprintf("prog/xdp id %d", id)) {
		t.Fatalf("%s %s does not show the sink's program %d in driver mode:\n%s", target, TargetLink, id, out)
	}

	for _, a := range []netip.Addr{addrs.V4.Addr(), addrs.V6.Addr()} {
		if out, err := l.Exec(ctx, lb, "ping", "-c", "2", "-i", "0.2", "-W", "2", a.String()); err != nil {
			t.Errorf("ping %s through the sink: %v\n%s", a, err, out)
		}
	}
	const perFamily = 50
	for _, a := range []netip.Addr{addrs.V4.Addr(), addrs.V6.Addr()} {
		if err := sendUDP(l, lb, netip.AddrPortFrom(a, 9), perFamily); err != nil {
			t.Fatal(err)
		}
	}
	want := uint64(2 * perFamily)
	if got := waitCount(t, sink, want, 2*time.Second); got != want {
		t.Errorf("sink counted %d frames, sent %d UDP datagrams (and pings, which must pass)", got, want)
	}
	time.Sleep(100 * time.Millisecond) // nothing more may come in late
	if got := waitCount(t, sink, want, 0); got != want {
		t.Errorf("sink counted %d frames later, want still %d", got, want)
	}

	if _, err := l.InstallXDPSink(target, "lo"); err == nil || !strings.Contains(err.Error(), "driver mode") {
		t.Errorf("sink on lo (no driver-mode XDP): got %v, want an error naming driver mode", err)
	}

	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if n, err := sink.Count(); err == nil {
		t.Errorf("Count after Close: %d, want an error", n)
	}
	if out := linkDetails(t, l, target); strings.Contains(out, "xdp") {
		t.Errorf("%s %s still has XDP after Close:\n%s", target, TargetLink, out)
	}
	assertProgramFreed(t, id)
	for _, a := range []netip.Addr{addrs.V4.Addr(), addrs.V6.Addr()} {
		assertUDPReaches(t, l, lb, target, netip.AddrPortFrom(a, 9))
	}

	// A sink left installed (here on lb1's own net1) goes with the lab.
	left, err := l.InstallXDPSink(lb, TargetLink)
	if err != nil {
		t.Fatal(err)
	}
	leftID := sinkProgramID(t, left)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := left.Count(); err == nil {
		t.Errorf("Count of a sink after Lab.Close: %d, want an error", n)
	}
	assertProgramFreed(t, leftID)
}

func sinkProgramID(t *testing.T, s *XDPSink) ebpf.ProgramID {
	t.Helper()
	info, err := s.prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, ok := info.ID()
	if !ok {
		t.Fatal("the kernel gives no program IDs")
	}
	return id
}

// linkDetails is `ip -d link show` of node's net1.
func linkDetails(t *testing.T, l *Lab, node string) string {
	t.Helper()
	out, err := l.Exec(context.Background(), node, "ip", "-d", "link", "show", "dev", TargetLink)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sendUDP sends n datagrams to to from node, 1 ms apart.
func sendUDP(l *Lab, node string, to netip.AddrPort, n int) error {
	return l.Do(node, func() error {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
		if err != nil {
			return err
		}
		defer c.Close()
		for i := range n {
			if _, err := c.Write([]byte(fmt.Sprintf("sink %d", i))); err != nil {
				return fmt.Errorf("datagram %d to %v: %w", i, to, err)
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
}

// waitCount polls s's count until it reaches want or within has passed.
func waitCount(t *testing.T, s *XDPSink, want uint64, within time.Duration) uint64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n, err := s.Count()
		if err != nil {
			t.Fatal(err)
		}
		if n >= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertProgramFreed checks that the kernel frees program id within 2 s
// (after the last reference: it frees it after an RCU grace period).
func assertProgramFreed(t *testing.T, id ebpf.ProgramID) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		p, err := ebpf.NewProgramFromID(id)
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if err == nil {
			p.Close()
		}
		if time.Now().After(deadline) {
			t.Errorf("program %d still loaded (or %v)", id, err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertUDPReaches checks that a datagram from node from reaches a socket
// of node to bound to dst.
func assertUDPReaches(t *testing.T, l *Lab, from, to string, dst netip.AddrPort) {
	t.Helper()
	var c *net.UDPConn
	if err := l.Do(to, func() (err error) {
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(dst))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := sendUDP(l, from, dst, 1); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "sink 0" {
		t.Errorf("UDP to %v after Close: got %q, %v; want the datagram", dst, buf[:n], err)
	}
}
