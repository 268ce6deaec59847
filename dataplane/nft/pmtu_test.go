package nft

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/florianl/go-nfqueue/v2"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

const testMark = 10001

// acceptWithMark reads queue q in the lb namespace and accepts every packet
// with testMark, standing in for the load balancer, until the test ends.
func acceptWithMark(t *testing.T, lbFD int, q uint16) {
	t.Helper()
	nf, err := nfqueue.Open(&nfqueue.Config{NetNS: lbFD, NfQueue: q, MaxQueueLen: 64,
		Copymode: nfqueue.NfQnlCopyMeta, AfFamily: unix.AF_UNSPEC, WriteTimeout: time.Second})
	if err != nil {
		t.Fatalf("open nfqueue: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); nf.Close() })
	err = nf.RegisterWithErrorFunc(ctx, func(a nfqueue.Attribute) int {
		_ = nf.SetVerdictWithMark(*a.PacketID, nfqueue.NfAccept, testMark)
		return 0
	}, func(error) int { return 0 })
	if err != nil {
		t.Fatalf("register nfqueue: %v", err)
	}
}

// TestIntegrationPMTUErrorsCarryVIPSource forwards too-big VIP datagrams (DF
// set) into a 1280-byte link and checks that the client receives the
// fragmentation-needed / packet-too-big from the VIP, with a valid checksum
// (the kernel verifies ICMPv6 checksums before raw delivery).
func TestIntegrationPMTUErrorsCarryVIPSource(t *testing.T) {
	l := newLab(t)
	netns.In(t, l.lb, "ip", "link", "set", "l1", "mtu", "1280")
	netns.In(t, l.lb, "sysctl", "-qw", "net.ipv4.fwmark_reflect=1")
	netns.In(t, l.lb, "sysctl", "-qw", "net.ipv6.fwmark_reflect=1")
	p := newKernelProgrammer(t, l.lb, l.lbFD)
	cfg := Config{VIPs: mustAddrs("20.0.0.1", "2000::1"), Queues: QueueRange{First: 7, Count: 1}}
	if err := p.Program(cfg); err != nil {
		t.Fatalf("Program: %v", err)
	}
	acceptWithMark(t, l.lbFD, 7)
	for _, tc := range []struct {
		name, network, client, icmpNet, vip string
		icmpType, icmpCode                  byte
	}{
		{"IPv4 frag-needed", "udp4", "10.99.0.2:0", "ip4:icmp", "20.0.0.1", 3, 4},
		{"IPv6 packet-too-big", "udp6", "[fd99::2]:0", "ip6:ipv6-icmp", "2000::1", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var icmp net.PacketConn
			netns.DoOrFail(t, l.client, func() (err error) {
				icmp, err = net.ListenPacket(tc.icmpNet, "")
				return err
			})
			defer icmp.Close()
			udp := listenUDP(t, l.client, tc.network, tc.client)
			vip := netip.MustParseAddr(tc.vip)
			big := make([]byte, 1400)
			deadline := time.Now().Add(3 * time.Second)
			buf := make([]byte, 2000)
			for sent := 0; sent < 5; sent++ { // bounded: 5 datagrams, 3 s
				if _, err := udp.WriteTo(big, net.UDPAddrFromAddrPort(netip.AddrPortFrom(vip, 9999))); err != nil {
					t.Logf("send: %v", err) // EMSGSIZE once the PMTU is learnt
				}
				if time.Now().After(deadline) {
					break
				}
				_ = icmp.SetReadDeadline(time.Now().Add(600 * time.Millisecond))
				for {
					n, from, err := icmp.ReadFrom(buf)
					if err != nil {
						break
					}
					if n >= 2 && buf[0] == tc.icmpType && buf[1] == tc.icmpCode {
						if got := from.(*net.IPAddr).IP.String(); got != tc.vip {
							t.Fatalf("ICMP error source %s, want the VIP %s", got, tc.vip)
						}
						return
					}
				}
			}
			t.Errorf("no ICMP type %d code %d reached the client", tc.icmpType, tc.icmpCode)
		})
	}
}
