package nft

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// lab is client -- lb -- target, with VIP 20.0.0.1 / 2000::1 on the
// target's loopback and the lb routing the VIPs to the target.
type lab struct {
	client, lb, target string
	lbFD               int
}

func newLab(t *testing.T) lab {
	t.Helper()
	var l lab
	l.client, _ = netns.New(t, "sllbrd-k-nft")
	l.lb, l.lbFD = netns.New(t, "sllbrd-k-nft")
	l.target, _ = netns.New(t, "sllbrd-k-nft")
	veth := func(a, aIf, b, bIf string) {
		netns.Run(t, "ip", "link", "add", aIf, "netns", a, "type", "veth", "peer", "name", bIf, "netns", b)
	}
	veth(l.client, "c0", l.lb, "l0")
	veth(l.lb, "l1", l.target, "t0")
	cmds := []struct {
		ns   string
		args string
	}{
		{l.client, "ip addr add 10.99.0.2/24 dev c0"}, {l.client, "ip -6 addr add fd99::2/64 dev c0 nodad"},
		{l.client, "ip link set c0 up"}, {l.client, "ip link set lo up"},
		{l.client, "ip route add 20.0.0.0/24 via 10.99.0.1"}, {l.client, "ip -6 route add 2000::/64 via fd99::1"},
		{l.lb, "ip addr add 10.99.0.1/24 dev l0"}, {l.lb, "ip -6 addr add fd99::1/64 dev l0 nodad"},
		{l.lb, "ip addr add 10.98.0.1/24 dev l1"}, {l.lb, "ip -6 addr add fd98::1/64 dev l1 nodad"},
		{l.lb, "ip link set l0 up"}, {l.lb, "ip link set l1 up"}, {l.lb, "ip link set lo up"},
		{l.lb, "sysctl -qw net.ipv4.ip_forward=1"}, {l.lb, "sysctl -qw net.ipv6.conf.all.forwarding=1"},
		{l.lb, "ip route add 20.0.0.1/32 via 10.98.0.2"}, {l.lb, "ip -6 route add 2000::1/128 via fd98::2"},
		{l.target, "ip addr add 10.98.0.2/24 dev t0"}, {l.target, "ip -6 addr add fd98::2/64 dev t0 nodad"},
		{l.target, "ip link set t0 up"}, {l.target, "ip link set lo up"},
		{l.target, "ip addr add 20.0.0.1/32 dev lo"}, {l.target, "ip -6 addr add 2000::1/128 dev lo"},
		{l.target, "ip route add default via 10.98.0.1"}, {l.target, "ip -6 route add default via fd98::1"},
	}
	for _, c := range cmds {
		netns.In(t, c.ns, strings.Fields(c.args)...)
	}
	return l
}

func TestIntegrationFailClosedWithoutReader(t *testing.T) {
	l := newLab(t)
	type path struct {
		vip      netip.AddrPort
		src, dst net.PacketConn
	}
	var paths []path
	for _, v := range []struct{ network, client, target, vip string }{
		{"udp4", "10.99.0.2:0", "0.0.0.0:9999", "20.0.0.1:9999"},
		{"udp6", "[fd99::2]:0", "[::]:9999", "[2000::1]:9999"},
	} {
		paths = append(paths, path{netip.MustParseAddrPort(v.vip),
			listenUDP(t, l.client, v.network, v.client), listenUDP(t, l.target, v.network, v.target)})
	}
	const n = 3
	for _, p := range paths {
		for try := 0; try < 10 && delivered(t, p.src, p.dst, p.vip, 1, 0) == 0; try++ {
			// neighbour discovery and link-local addresses settle
		}
		if got := delivered(t, p.src, p.dst, p.vip, n, 1); got != n {
			t.Fatalf("control: %d/%d datagrams to %s before programming", got, n, p.vip)
		}
	}
	p := newKernelProgrammer(t, l.lb, l.lbFD)
	if err := p.Program(Config{VIPs: []netip.Addr{paths[0].vip.Addr(), paths[1].vip.Addr()},
		Queues: QueueRange{First: 7, Count: 1}}); err != nil {
		t.Fatalf("Program: %v", err)
	}
	for _, p := range paths {
		if got := delivered(t, p.src, p.dst, p.vip, n, 2); got != 0 {
			t.Errorf("%d datagrams to %s passed with no queue reader: not fail-closed", got, p.vip)
		}
	}
	if got := queuedPackets(t, l.lb); got != 2*n {
		t.Errorf("prerouting rules counted %d packets, want %d", got, 2*n)
	}
	if err := p.Cleanup(); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	for _, p := range paths {
		if got := delivered(t, p.src, p.dst, p.vip, n, 3); got != n {
			t.Errorf("%d/%d datagrams to %s after Cleanup", got, n, p.vip)
		}
	}
}

// queuedPackets sums the counters of our prerouting chain.
func queuedPackets(t *testing.T, ns string) int {
	out := netns.In(t, ns, "nft", "list", "chain", "inet", DefaultTableName, ChainPrerouting)
	total := 0
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "packets" {
			n, _ := strconv.Atoi(f[i+1])
			total += n
		}
	}
	return total
}
