package responder

import (
	"bufio"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationAnswersOnVIPsAddedAfterStart starts a responder in a new
// network namespace on VIPs that are on no interface (and without
// ip_nonlocal_bind), sees that nothing answers, puts the VIPs on lo as
// `sllbrd target` does in a pod, and then gets answers over UDP and TCP,
// IPv4 and IPv6, each from the VIP the request went to, to a client that
// is not the VIP.
func TestIntegrationAnswersOnVIPsAddedAfterStart(t *testing.T) {
	require.Root(t)
	require.Programs(t, "ip")
	ns, _ := netns.New(t, "sllbrd-resp")
	netns.In(t, ns, "ip", "link", "set", "lo", "up")
	for _, sysctl := range []string{"net.ipv4.ip_nonlocal_bind", "net.ipv6.ip_nonlocal_bind"} {
		if got := netns.In(t, ns, "sysctl", "-n", sysctl); got != "0\n" {
			t.Fatalf("%s is %q in a new namespace, want 0", sysctl, got)
		}
	}
	vips := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")}
	clients := map[bool]netip.Addr{true: netip.MustParseAddr("127.0.0.1"), false: netip.MustParseAddr("::1")}
	const udpPort, tcpPort = 5000, 5001
	var s *Server
	netns.DoOrFail(t, ns, func() (err error) { // sockets belong to the namespace they are made in
		s, err = Listen(Config{Name: "pod-a", Addrs: vips, UDPPorts: []uint16{udpPort}, TCPPorts: []uint16{tcpPort}})
		return err
	})
	serve(t, s)

	for _, vip := range vips {
		err := netns.Do(ns, func() error {
			_, err := askTCP(clients[vip.Is4()], netip.AddrPortFrom(vip, tcpPort))
			return err
		})
		if err == nil {
			t.Fatalf("tcp to %s answered before the VIP was on lo", vip)
		}
	}
	netns.In(t, ns, "ip", "addr", "add", "192.0.2.10/32", "dev", "lo")
	netns.In(t, ns, "ip", "-6", "addr", "add", "2001:db8::10/128", "dev", "lo", "nodad")

	for _, vip := range vips {
		client := clients[vip.Is4()]
		netns.DoOrFail(t, ns, func() error {
			to := netip.AddrPortFrom(vip, udpPort)
			r, from, err := askUDP(client, to)
			if err != nil {
				t.Errorf("udp to %s: %v", to, err)
			} else if from != to || r.Target != "pod-a" || r.Proto != "udp" || r.Client.Addr() != client {
				t.Errorf("udp to %s: %+v from %s, want target pod-a, client %s, sent from the VIP", to, r, from, client)
			}
			to = netip.AddrPortFrom(vip, tcpPort)
			r, err = askTCP(client, to)
			if err != nil {
				t.Errorf("tcp to %s: %v", to, err)
			} else if r.Target != "pod-a" || r.Proto != "tcp" || r.Client.Addr() != client {
				t.Errorf("tcp to %s: %+v, want target pod-a, client %s", to, r, client)
			}
			return nil
		})
	}
}

// askUDP sends one datagram from an unconnected socket on client to to and
// returns the reply and the address it came from.
func askUDP(client netip.Addr, to netip.AddrPort) (Reply, netip.AddrPort, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(client, 0)))
	if err != nil {
		return Reply{}, netip.AddrPort{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.WriteToUDPAddrPort([]byte("hi"), to); err != nil {
		return Reply{}, netip.AddrPort{}, err
	}
	buf := make([]byte, 512)
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		return Reply{}, netip.AddrPort{}, err
	}
	r, err := ParseReply(string(buf[:n]))
	return r, unmap(from), err
}

// askTCP connects from client to to and returns the reply line.
func askTCP(client netip.Addr, to netip.AddrPort) (Reply, error) {
	d := net.Dialer{Timeout: time.Second, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(client, 0))}
	c, err := d.Dial("tcp", to.String())
	if err != nil {
		return Reply{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return Reply{}, err
	}
	r, err := ParseReply(line)
	if err == nil && r.Client != unmap(c.LocalAddr().(*net.TCPAddr).AddrPort()) {
		err = &net.AddrError{Err: "reply names another client " + r.Client.String(), Addr: c.LocalAddr().String()}
	}
	return r, err
}
