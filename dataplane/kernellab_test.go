package dataplane

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/model"
)

// kernelLab is a client namespace and an LB namespace joined by a veth
// pair, with sllbrd's dataplane (engine, kernel path rules, policy routes,
// one nfqueue served by the engine) programmed in the LB. A recorder table
// in the LB notes the fwmark every VIP packet leaves prerouting's raw
// priority with (the kernel path's or the userspace verdict's), then drops
// the packet.
type kernelLab struct {
	client, lb string
	lbFD       int
	engine     *Engine
	prog       *Programmer
	queues     *nfqueue.Group
	conn       *nftables.Conn // in the LB
}

var (
	labVIP4    = netip.MustParseAddr("20.0.0.1")
	labVIP6    = netip.MustParseAddr("2000::1")
	labClient4 = netip.MustParseAddr("10.99.0.2")
	labClient6 = netip.MustParseAddr("fd99::2")
)

// recorderTable notes, per packet to a VIP: (family, protocol, source
// port, mark) of TCP, UDP and SCTP (whole or first fragments; later
// fragments are dropped unnoted: this kernel reads their payload as the
// transport header), (family,
// protocol, echo identifier, mark) of echo requests, and (source, mark) of
// other ICMP (errors: the test gives each its own source).
const recorderTable = `table inet rec {
	set flows { type nf_proto . inet_proto . inet_service . mark; flags dynamic; size 65535; }
	set echo { typeof meta nfproto . meta l4proto . icmp id . meta mark; flags dynamic; size 65535; }
	set errors4 { type ipv4_addr . mark; flags dynamic; size 65535; }
	set errors6 { type ipv6_addr . mark; flags dynamic; size 65535; }
	chain pre {
		type filter hook prerouting priority -150; policy accept;
		meta nfproto ipv4 ip daddr != 20.0.0.0/24 accept
		meta nfproto ipv6 ip6 daddr != 2000::/64 accept
		ip frag-off & 0x1fff != 0 drop
		frag frag-off != 0 drop
		meta l4proto { tcp, udp, sctp } add @flows { meta nfproto . meta l4proto . th sport . meta mark }
		icmp type echo-request add @echo { meta nfproto . meta l4proto . icmp id . meta mark }
		icmpv6 type echo-request add @echo { meta nfproto . meta l4proto . icmpv6 id . meta mark }
		meta l4proto icmp icmp type != echo-request add @errors4 { ip saddr . meta mark }
		meta l4proto ipv6-icmp icmpv6 type != echo-request add @errors6 { ip6 saddr . meta mark }
		drop
	}
}
`

// newKernelLab builds the lab; opts configure its nft.Programmer after the
// defaults (which commit entry changes through an nft.NetlinkEntryConn).
func newKernelLab(t testing.TB, opts ...nft.Option) *kernelLab {
	t.Helper()
	require.Root(t)
	require.Programs(t, "ip", "nft")
	l := &kernelLab{}
	l.client, _ = netns.New(t, "sllbrd-k-fp")
	l.lb, l.lbFD = netns.New(t, "sllbrd-k-fp")
	netns.Run(t, "ip", "link", "add", "c0", "netns", l.client, "type", "veth", "peer", "name", "l0", "netns", l.lb)
	for _, c := range []struct{ ns, args string }{
		{l.client, "ip addr add 10.99.0.2/24 dev c0"}, {l.client, "ip -6 addr add fd99::2/64 dev c0 nodad"},
		{l.client, "ip link set c0 up"}, {l.client, "ip link set lo up"},
		{l.client, "ip route add 20.0.0.0/24 via 10.99.0.1"}, {l.client, "ip -6 route add 2000::/64 via fd99::1"},
		{l.lb, "ip addr add 10.99.0.1/24 dev l0"}, {l.lb, "ip -6 addr add fd99::1/64 dev l0 nodad"},
		{l.lb, "ip link set l0 up"}, {l.lb, "ip link set lo up"},
		{l.lb, "ip link add net1 type veth peer name net1p"}, {l.lb, "ip link set net1 up"}, {l.lb, "ip link set net1p up"},
		{l.lb, "ip addr add 169.111.100.1/16 dev net1"}, {l.lb, "ip -6 addr add fd00:111::1/64 dev net1 nodad"},
	} {
		netns.In(t, c.ns, strings.Fields(c.args)...)
	}
	// The LB's link-layer address, so the client never waits for (or
	// drops while) resolving it.
	mac := strings.TrimSpace(netns.In(t, l.lb, "cat", "/sys/class/net/l0/address"))
	netns.In(t, l.client, "ip", "neigh", "add", "10.99.0.1", "lladdr", mac, "dev", "c0", "nud", "permanent")
	netns.In(t, l.client, "ip", "neigh", "add", "fd99::1", "lladdr", mac, "dev", "c0", "nud", "permanent")
	netns.Run(t, "sh", "-c", fmt.Sprintf("ip netns exec %s nft -f - <<'EOF'\n%sEOF", l.lb, recorderTable))

	var err error
	// Sockets kept open, as sllbrd keeps them (nft.NetlinkEntryConn says why).
	if l.conn, err = nftables.New(nftables.WithNetNSFd(l.lbFD), nftables.AsLasting()); err != nil {
		t.Fatal(err)
	}
	entries := nft.NewNetlinkEntryConn(l.lbFD)
	t.Cleanup(func() {
		_ = l.conn.CloseLasting()
		_ = entries.Close()
	})
	rules, err := nft.New(l.conn, append([]nft.Option{nft.WithEntryConn(entries)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	maxOffset, err := nft.ProbeKernelPath(l.conn)
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := route.NewNetlinkKernel(l.lbFD)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := route.New(kernel)
	if err != nil {
		t.Fatal(err)
	}
	l.engine = NewEngine()
	l.prog = NewProgrammer(l.engine, rules, routes, nft.QueueRange{First: 0, Count: 1}, false, ReturnTable, WithKernelPath(maxOffset))
	netns.DoOrFail(t, l.lb, func() (err error) {
		l.queues, err = nfqueue.OpenGroup(0, 1)
		return err
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.engine.Serve(ctx, l.queues) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		l.queues.Close()
	})
	return l
}

// apply programs st (with the lab's Gateway network) and fails on error.
func (l *kernelLab) apply(t testing.TB, st *model.State) Applied {
	t.Helper()
	st.Gateway = model.Gateway{Namespace: "ns", Name: "gw", Networks: []model.Network{{Name: "nad", Interface: "net1"}}}
	applied, err := l.prog.Apply(st, nil)
	if err != nil {
		t.Fatalf("Apply generation %d: %v", st.Generation, err)
	}
	return applied
}

// send sends whole IP packets from the client, paced so that no queue on
// the way overflows.
func (l *kernelLab) send(t *testing.T, pkts [][]byte) {
	t.Helper()
	netns.DoOrFail(t, l.client, func() error {
		fds := map[bool]int{}
		for _, six := range []bool{false, true} {
			family := unix.AF_INET
			if six {
				family = unix.AF_INET6
			}
			fd, err := unix.Socket(family, unix.SOCK_RAW, unix.IPPROTO_RAW)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			fds[six] = fd
		}
		for i, p := range pkts {
			var err error
			if p[0]>>4 == 4 {
				err = unix.Sendto(fds[false], p, 0, &unix.SockaddrInet4{Addr: [4]byte(p[16:20])})
			} else {
				err = unix.Sendto(fds[true], p, 0, &unix.SockaddrInet6{Addr: [16]byte(p[24:40])})
			}
			if err != nil {
				return fmt.Errorf("send packet %d: %w", i, err)
			}
			if i%32 == 31 {
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	})
}

// recorded is one element of a recorder set: a flow tag and its mark.
type recorded struct {
	family uint8 // 4 or 6
	proto  uint8
	tag    uint16     // source port or echo identifier
	src    netip.Addr // errors: the error's source
	mark   uint32
}

// records reads recorder set name.
func (l *kernelLab) records(t *testing.T, name string) []recorded {
	t.Helper()
	elems, err := l.conn.GetSetElements(&nftables.Set{Name: name, Table: &nftables.Table{Name: "rec", Family: nftables.TableFamilyINet}})
	if err != nil {
		t.Fatalf("read recorder set %s: %v", name, err)
	}
	var out []recorded
	for _, e := range elems {
		k := e.Key
		var r recorded
		switch name {
		case "errors4":
			r.src, _ = netip.AddrFromSlice(k[0:4])
			r.mark = binary.NativeEndian.Uint32(k[4:8])
		case "errors6":
			r.src, _ = netip.AddrFromSlice(k[0:16])
			r.mark = binary.NativeEndian.Uint32(k[16:20])
		default:
			r.family = 4
			if k[0] == unix.NFPROTO_IPV6 {
				r.family = 6
			}
			r.proto, r.tag, r.mark = k[4], binary.BigEndian.Uint16(k[8:10]), binary.NativeEndian.Uint32(k[12:16])
		}
		out = append(out, r)
	}
	return out
}

// waitRecords polls set name until it holds at least n elements (10 s at
// most) and returns them.
func (l *kernelLab) waitRecords(t *testing.T, name string, n int) []recorded {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := l.records(t, name)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hostAddr returns 10.98.x.y or fd98::x:y for i: the source of the i-th
// ICMP error, so that the recorder tells errors apart.
func hostAddr(six bool, i int) netip.Addr {
	if six {
		return netip.AddrFrom16([16]byte{0xfd, 0x98, 14: byte(i >> 8), 15: byte(i)})
	}
	return netip.AddrFrom4([4]byte{10, 98, byte(i >> 8), byte(i)})
}
