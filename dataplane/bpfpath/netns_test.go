package bpfpath

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/model"
)

// The three-namespace lab of TestIntegrationThroughNamespaces:
// client (c0) -- (l0) lb (l1) -- (t0) target, which holds the VIPs on lo.
var (
	labVIP4, labVIP6       = netip.MustParseAddr("10.77.100.1"), netip.MustParseAddr("fd77:100::1")
	labTarget4, labTarget6 = netip.MustParseAddr("10.77.2.2"), netip.MustParseAddr("fd77:2::2")
)

const (
	labMark     = 0x10000
	labPort     = 5300
	labDatagram = 50 // datagrams per family and phase
)

// threeNamespaces builds the lab and returns the namespaces' names; they
// (and so the veths) are deleted in Cleanup, on failure too. lb forwards
// (the stack's route to the VIPs goes via the target) and counts, in an
// nftables forward chain, the packets to each VIP it forwards.
func threeNamespaces(t *testing.T) (client, lb, target string) {
	t.Helper()
	client, _ = netns.New(t, "sllbrd-bpf-client")
	lb, _ = netns.New(t, "sllbrd-bpf-lb")
	target, _ = netns.New(t, "sllbrd-bpf-target")
	// No duplicate address detection: until a link's link-local address
	// has passed it, the kernel sends no neighbour solicitation on the link
	// (ndisc_send_ns), so the first IPv6 packets to a next hop would wait
	// for it (a second and more).
	for _, ns := range []string{client, lb, target} {
		netns.DoOrFail(t, ns, func() error {
			for _, f := range []string{"/proc/sys/net/ipv6/conf/all/accept_dad", "/proc/sys/net/ipv6/conf/default/accept_dad"} {
				if err := os.WriteFile(f, []byte("0"), 0o644); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, c := range [][2]string{
		{client, "link set lo up"}, {lb, "link set lo up"}, {target, "link set lo up"},
		{lb, "link add l0 type veth peer name c0 netns " + client},
		{lb, "link add l1 type veth peer name t0 netns " + target},
		{client, "addr add 10.77.1.1/24 dev c0"}, {client, "addr add fd77:1::1/64 dev c0 nodad"},
		{lb, "addr add 10.77.1.2/24 dev l0"}, {lb, "addr add fd77:1::2/64 dev l0 nodad"},
		{lb, "addr add 10.77.2.1/24 dev l1"}, {lb, "addr add fd77:2::1/64 dev l1 nodad"},
		{target, "addr add 10.77.2.2/24 dev t0"}, {target, "addr add fd77:2::2/64 dev t0 nodad"},
		{target, "addr add 10.77.100.1/32 dev lo"}, {target, "addr add fd77:100::1/128 dev lo"},
		{client, "link set c0 up"}, {lb, "link set l0 up"}, {lb, "link set l1 up"}, {target, "link set t0 up"},
		{client, "route add 10.77.100.1/32 via 10.77.1.2"}, {client, "-6 route add fd77:100::1/128 via fd77:1::2"},
		{target, "route add default via 10.77.2.1"}, {target, "-6 route add default via fd77:2::1"},
		{lb, "route add 10.77.100.1/32 via 10.77.2.2"}, {lb, "-6 route add fd77:100::1/128 via fd77:2::2"},
	} {
		netns.Run(t, append([]string{"ip", "-n", c[0]}, strings.Fields(c[1])...)...)
	}
	// Links up, each with its link-local address (the source of its
	// neighbour solicitations).
	for _, l := range [][2]string{{client, "c0"}, {lb, "l0"}, {lb, "l1"}, {target, "t0"}} {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			out := netns.In(t, l[0], "ip", "-6", "addr", "show", "dev", l[1], "scope", "link")
			if strings.Contains(out, "fe80::") && !strings.Contains(out, "tentative") && !strings.Contains(out, "NO-CARRIER") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s in %s: no usable link-local address after 5 s: %s", l[1], l[0], out)
			}
		}
	}
	netns.DoOrFail(t, lb, func() error {
		for _, f := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"} {
			if err := os.WriteFile(f, []byte("1"), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	// ("fwd" is an nft keyword: the chain is "vips".)
	cmd := exec.Command("ip", "netns", "exec", lb, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader("table inet sllbrd_bpf_test {\n\tchain vips {\n\t\ttype filter hook forward priority 0;\n" +
		"\t\tip daddr 10.77.100.1 counter\n\t\tip6 daddr fd77:100::1 counter\n\t}\n}\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft in %s: %v: %s", lb, err, out)
	}
	return client, lb, target
}

var nftCounter = regexp.MustCompile(`daddr (\S+) counter packets (\d+)`)

// labCounts is what lb's stack counted: its nftables forward counters of
// the VIPs, Ip ForwDatagrams, Ip6OutForwDatagrams and Icmp OutTimeExcds.
type labCounts struct {
	fwd4, fwd6, forw4, forw6, timeExceeded uint64
}

func readLabCounts(t *testing.T, lb string) labCounts {
	t.Helper()
	var c labCounts
	for _, m := range nftCounter.FindAllStringSubmatch(netns.In(t, lb, "nft", "list", "chain", "inet", "sllbrd_bpf_test", "vips"), -1) {
		n, _ := strconv.ParseUint(m[2], 10, 64)
		if m[1] == labVIP4.String() {
			c.fwd4 = n
		} else {
			c.fwd6 = n
		}
	}
	snmp, snmp6 := netns.In(t, lb, "cat", "/proc/net/snmp"), netns.In(t, lb, "cat", "/proc/net/snmp6")
	c.forw4, c.timeExceeded = snmpValue(t, snmp, "Ip:", "ForwDatagrams"), snmpValue(t, snmp, "Icmp:", "OutTimeExcds")
	for _, line := range strings.Split(snmp6, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "Ip6OutForwDatagrams" {
			c.forw6, _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	return c
}

// snmpValue reads counter name of section from /proc/net/snmp's text
// (pairs of lines: names, then values).
func snmpValue(t *testing.T, text, section, name string) uint64 {
	t.Helper()
	lines := strings.Split(text, "\n")
	for i := 0; i+1 < len(lines); i++ {
		keys, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(keys) == 0 || keys[0] != section || len(values) != len(keys) || values[0] != section {
			continue
		}
		for j, k := range keys {
			if k == name {
				v, _ := strconv.ParseUint(values[j], 10, 64)
				return v
			}
		}
	}
	t.Fatalf("no %s %s in /proc/net/snmp", section, name)
	return 0
}

// receiver is a UDP socket in the target bound to a VIP that reports each
// datagram's TTL or hop limit.
type receiver struct {
	conn *net.UDPConn
	fam  int
}

func listen(t *testing.T, target string, vip netip.Addr) *receiver {
	t.Helper()
	r := &receiver{fam: 4}
	if vip.Is6() {
		r.fam = 6
	}
	netns.DoOrFail(t, target, func() error {
		c, err := net.ListenUDP("udp"+strconv.Itoa(r.fam), net.UDPAddrFromAddrPort(netip.AddrPortFrom(vip, labPort)))
		if err != nil {
			return err
		}
		r.conn = c
		raw, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		err = raw.Control(func(fd uintptr) {
			if r.fam == 4 {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTTL, 1)
			} else {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 1)
			}
		})
		if err != nil {
			return err
		}
		return serr
	})
	t.Cleanup(func() { r.conn.Close() })
	return r
}

// receive reads datagrams until n came or a second passes without one
// (three before the first), and returns how many came and their TTLs (hop
// limits), counted.
func (r *receiver) receive(t *testing.T, n int) (int, map[int]int) {
	t.Helper()
	ttls := map[int]int{}
	got := 0
	buf, oob := make([]byte, 1500), make([]byte, 256)
	for got < n {
		wait := time.Second
		if got == 0 {
			wait = 3 * time.Second
		}
		_ = r.conn.SetReadDeadline(time.Now().Add(wait))
		_, oobn, _, _, err := r.conn.ReadMsgUDP(buf, oob)
		if err != nil {
			break
		}
		got++
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if (m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TTL) ||
				(m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_HOPLIMIT) {
				ttls[int(int32(binary.NativeEndian.Uint32(m.Data)))]++
			}
		}
	}
	return got, ttls
}

// send sends n datagrams from the client to vip with TTL (hop limit) ttl.
func send(t *testing.T, client string, vip netip.Addr, n, ttl int) {
	t.Helper()
	netns.DoOrFail(t, client, func() error {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(vip, labPort)))
		if err != nil {
			return err
		}
		defer c.Close()
		raw, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := raw.Control(func(fd uintptr) {
			if vip.Is4() {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, ttl)
			} else {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, ttl)
			}
		}); err != nil || serr != nil {
			return fmt.Errorf("setting the TTL: %v %v", err, serr)
		}
		for i := range n {
			if _, err := fmt.Fprintf(c, "datagram %d", i); err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // bounded, and no burst for the neighbour queue
		}
		return nil
	})
}

// labInput is one route to both VIPs (TCP, UDP, and so echoes) to one
// Service whose one endpoint is the target.
func labInput(t *testing.T) fastpath.Input {
	tbl := buildTable(t, 251, 1, 1)
	entries := tbl.AppendEntrySlots(nil)
	return fastpath.Input{
		Services: []fastpath.Service{{Name: "svc", IPv4: entries, IPv6: entries,
			Endpoints: []fastpath.Endpoint{{ID: 0, Mark: labMark, IPv4: labTarget4, IPv6: labTarget6}}}},
		Routes: []model.Route{{Name: "ns/vip", Service: "svc", Priority: 1,
			Destinations: []netip.Prefix{netip.PrefixFrom(labVIP4, 32), netip.PrefixFrom(labVIP6, 128)},
			Protocols:    []model.Protocol{model.ProtoTCP, model.ProtoUDP}}},
	}
}

// TestIntegrationThroughNamespaces attaches the program by tcx at
// the lb namespace's ingress from the client and checks, on the real
// kernel, that UDP in both families and ICMP echo reach the target with
// TTL or hop limit one less, past lb's netfilter and IP forwarding (its
// nftables forward counters of the VIPs and ForwDatagrams do not move);
// that a TTL 1 packet goes to lb's stack, which sends time exceeded; and
// that after Detach the stack forwards the same traffic again (its
// counters move by exactly the datagrams sent).
func TestIntegrationThroughNamespaces(t *testing.T) {
	require.Root(t)
	require.Programs(t, "ip", "nft", "ping")
	d := load(t, Options{})
	client, lb, target := threeNamespaces(t)
	if _, err := d.Configure(labInput(t)); err != nil {
		t.Fatal(err)
	}
	var l1, mtu int
	var a *Attachment
	netns.DoOrFail(t, lb, func() error {
		ifc, err := net.InterfaceByName("l1")
		if err != nil {
			return err
		}
		l1, mtu = ifc.Index, ifc.MTU
		if _, err := d.Attach("nosuch0"); err == nil || !strings.Contains(err.Error(), `interface "nosuch0"`) {
			return fmt.Errorf("attaching to a missing interface: %v, want an error naming it", err)
		}
		a, err = d.Attach("l0")
		return err
	})
	t.Cleanup(func() { _ = a.Detach() })
	if err := d.SetNextHops([]NextHop{{Mark: labMark, Via: labTarget4, Ifindex: l1, MTU: mtu}, {Mark: labMark, Via: labTarget6, Ifindex: l1, MTU: mtu}}); err != nil {
		t.Fatal(err)
	}
	rx4, rx6 := listen(t, target, labVIP4), listen(t, target, labVIP6)

	phase := func(name string, wantForwarded bool) {
		t.Helper()
		before, counts := readLabCounts(t, lb), mustCounters(t, d)
		start := time.Now()
		for _, rx := range []*receiver{rx4, rx6} {
			vip := labVIP4
			if rx.fam == 6 {
				vip = labVIP6
			}
			sent := time.Now()
			send(t, client, vip, labDatagram, 64)
			got, ttls := rx.receive(t, labDatagram)
			if got != labDatagram || ttls[63] != labDatagram {
				t.Errorf("%s, IPv%d: %d of %d datagrams reached the target, TTLs %v; want all, with TTL 63", name, rx.fam, got, labDatagram, ttls)
			}
			t.Logf("%s, IPv%d: %d datagrams sent and received in %v", name, rx.fam, got, time.Since(sent).Round(time.Millisecond))
		}
		after, now := readLabCounts(t, lb), mustCounters(t, d)
		redirected := now.Actions[ActionRedirect].Packets - counts.Actions[ActionRedirect].Packets
		stack := labCounts{fwd4: after.fwd4 - before.fwd4, fwd6: after.fwd6 - before.fwd6, forw4: after.forw4 - before.forw4, forw6: after.forw6 - before.forw6}
		t.Logf("%s: %d datagrams per family in %v; the program redirected %d; lb's stack: nft forward %d (IPv4) %d (IPv6), ForwDatagrams %d, Ip6OutForwDatagrams %d",
			name, labDatagram, time.Since(start).Round(time.Millisecond), redirected, stack.fwd4, stack.fwd6, stack.forw4, stack.forw6)
		want := labCounts{}
		wantRedirected := uint64(2 * labDatagram)
		if wantForwarded {
			want = labCounts{fwd4: labDatagram, fwd6: labDatagram, forw4: labDatagram, forw6: labDatagram}
			wantRedirected = 0
		}
		if stack != want || redirected != wantRedirected {
			t.Errorf("%s: lb's stack counted %+v, the program redirected %d; want %+v and %d", name, stack, redirected, want, wantRedirected)
		}
	}
	phase("attached", false)

	// ICMP echo, both families: redirected too, replies forwarded back by
	// lb's stack (their destination is the client, no VIP).
	before := readLabCounts(t, lb)
	netns.In(t, client, "ping", "-c", "3", "-i", "0.2", "-W", "2", labVIP4.String())
	netns.In(t, client, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", labVIP6.String())
	if after := readLabCounts(t, lb); after.fwd4 != before.fwd4 || after.fwd6 != before.fwd6 {
		t.Errorf("echo requests: lb's nft forward counters of the VIPs moved from %+v to %+v; want them redirected past it", before, after)
	}
	c := mustCounters(t, d)
	ep4 := c.Endpoints[fastpath.EndpointLabels{Service: "svc", ID: 0, Addr: labTarget4}]
	ep6 := c.Endpoints[fastpath.EndpointLabels{Service: "svc", ID: 0, Addr: labTarget6}]
	if ep4.Packets != labDatagram+3 || ep6.Packets != labDatagram+3 || c.Routes[fastpath.RouteLabels{Route: "ns/vip", Service: "svc"}].Packets != 2*labDatagram+6 {
		t.Errorf("counters %+v: want %d packets per endpoint address and %d for the route", c, labDatagram+3, 2*labDatagram+6)
	}

	// TTL 1: to lb's stack, marked, which sends time exceeded and forwards
	// nothing.
	before = readLabCounts(t, lb)
	send(t, client, labVIP4, 1, 1)
	if got, _ := rx4.receive(t, 1); got != 0 {
		t.Errorf("a TTL 1 datagram reached the target")
	}
	after := readLabCounts(t, lb)
	if after.timeExceeded != before.timeExceeded+1 || after.fwd4 != before.fwd4 || after.forw4 != before.forw4 {
		t.Errorf("TTL 1: lb's counters went from %+v to %+v; want one time exceeded, nothing forwarded", before, after)
	}
	if n := mustCounters(t, d).Actions[ActionTTLExceeded].Packets; n != 1 {
		t.Errorf("ttl-exceeded action: %d packets, want 1", n)
	}

	if err := a.Detach(); err != nil {
		t.Fatal(err)
	}
	phase("detached", true)
}

func mustCounters(t *testing.T, d *Datapath) Counts {
	t.Helper()
	c, err := d.Counters()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
