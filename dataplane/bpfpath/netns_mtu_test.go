package bpfpath

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// labMTU is the MTU of the lb-target link in TestIntegrationTooBigThroughNamespaces
// (the client's link keeps 1500).
const labMTU = 1280

// sizedSender is a UDP socket in the client, connected to a VIP, that
// sends datagrams of a chosen IP length and reads the ICMP errors that
// come back (IP_RECVERR).
type sizedSender struct {
	conn *net.UDPConn
	v6   bool
}

// dialSized opens a sizedSender to vip; df: path MTU discovery on (DF set,
// never fragmented by the client), else off (IPv4: no DF).
func dialSized(t *testing.T, client string, vip netip.Addr, df bool) *sizedSender {
	t.Helper()
	s := &sizedSender{v6: vip.Is6()}
	netns.DoOrFail(t, client, func() error {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(vip, labPort)))
		if err != nil {
			return err
		}
		s.conn = c
		raw, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		err = raw.Control(func(fd uintptr) {
			if s.v6 {
				pmtu := unix.IPV6_PMTUDISC_DO
				if !df {
					pmtu = unix.IPV6_PMTUDISC_DONT
				}
				serr = errors.Join(unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, pmtu),
					unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVERR, 1))
				return
			}
			pmtu := unix.IP_PMTUDISC_DO
			if !df {
				pmtu = unix.IP_PMTUDISC_DONT
			}
			serr = errors.Join(unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, pmtu),
				unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVERR, 1))
		})
		return errors.Join(err, serr)
	})
	t.Cleanup(func() { s.conn.Close() })
	return s
}

// send sends one datagram whose IP packet is ipLen bytes long.
func (s *sizedSender) send(t *testing.T, ipLen int) {
	t.Helper()
	hdr := 20 + 8
	if s.v6 {
		hdr = 40 + 8
	}
	if _, err := s.conn.Write(make([]byte, ipLen-hdr)); err != nil {
		t.Fatalf("sending %d bytes: %v", ipLen, err)
	}
}

// icmpError waits up to wait for an ICMP error on the socket's error
// queue and returns it (nil if none came).
func (s *sizedSender) icmpError(t *testing.T, wait time.Duration) *unix.SockExtendedErr {
	t.Helper()
	raw, err := s.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 2048), make([]byte, 512)
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var oobn int
		var rerr error
		if err := raw.Control(func(fd uintptr) {
			_, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		}); err != nil {
			t.Fatal(err)
		}
		if errors.Is(rerr, unix.EAGAIN) {
			continue
		}
		if rerr != nil {
			t.Fatalf("reading the error queue: %v", rerr)
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if (m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_RECVERR) ||
				(m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_RECVERR) {
				if len(m.Data) < int(unsafe.Sizeof(unix.SockExtendedErr{})) {
					t.Fatalf("a short extended error: %x", m.Data)
				}
				e := *(*unix.SockExtendedErr)(unsafe.Pointer(&m.Data[0]))
				return &e
			}
		}
	}
	return nil
}

// nothing reports whether no datagram reaches r within wait.
func (r *receiver) nothing(wait time.Duration) bool {
	_ = r.conn.SetReadDeadline(time.Now().Add(wait))
	_, _, err := r.conn.ReadFromUDPAddrPort(make([]byte, 2048))
	return err != nil
}

// TestIntegrationTooBigThroughNamespaces: with the lb-target link at MTU
// 1280 (the client's at 1500) and the next hop's MTU read from lb's
// interface, as sllbrd fills it, a datagram of exactly 1280 bytes with DF
// is redirected by the program (lb's stack forwards nothing); one of 1281
// with DF goes to lb's stack, which sends the client ICMP fragmentation
// needed (IPv4) or packet too big (IPv6) with MTU 1280, forwards nothing,
// and the target gets nothing; an IPv4 datagram of 1500 bytes without DF
// goes to lb's stack, which fragments it (two fragments) and the target
// gets it whole. The program counts the three too big, the two
// redirected.
func TestIntegrationTooBigThroughNamespaces(t *testing.T) {
	require.Root(t)
	require.Programs(t, "ip", "nft")
	d := load(t, Options{})
	client, lb, target := threeNamespaces(t)
	for _, c := range [][2]string{{lb, "link set l1 mtu 1280"}, {target, "link set t0 mtu 1280"}} {
		netns.Run(t, append([]string{"ip", "-n", c[0]}, strings.Fields(c[1])...)...)
	}
	if _, err := d.Configure(labInput(t)); err != nil {
		t.Fatal(err)
	}
	var l1 *net.Interface
	var a *Attachment
	netns.DoOrFail(t, lb, func() error {
		var err error
		if l1, err = net.InterfaceByName("l1"); err != nil {
			return err
		}
		a, err = d.Attach("l0")
		return err
	})
	t.Cleanup(func() { _ = a.Detach() })
	if l1.MTU != labMTU {
		t.Fatalf("l1's MTU is %d, want %d", l1.MTU, labMTU)
	}
	if err := d.SetNextHops([]NextHop{{Mark: labMark, Via: labTarget4, Ifindex: l1.Index, MTU: l1.MTU},
		{Mark: labMark, Via: labTarget6, Ifindex: l1.Index, MTU: l1.MTU}}); err != nil {
		t.Fatal(err)
	}
	rx4, rx6 := listen(t, target, labVIP4), listen(t, target, labVIP6)
	type stackCounts struct {
		lab                                labCounts
		fragCreates, unreach, packetTooBig uint64
	}
	read := func() stackCounts {
		snmp, snmp6 := netns.In(t, lb, "cat", "/proc/net/snmp"), netns.In(t, lb, "cat", "/proc/net/snmp6")
		c := stackCounts{lab: readLabCounts(t, lb), fragCreates: snmpValue(t, snmp, "Ip:", "FragCreates"), unreach: snmpValue(t, snmp, "Icmp:", "OutDestUnreachs")}
		for _, line := range strings.Split(snmp6, "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "Icmp6OutPktTooBigs" {
				fmt.Sscan(f[1], &c.packetTooBig)
			}
		}
		return c
	}
	start := read()

	// At the MTU, with DF: redirected, TTL one less, past lb's stack.
	for _, rx := range []*receiver{rx4, rx6} {
		vip := map[int]netip.Addr{4: labVIP4, 6: labVIP6}[rx.fam]
		dialSized(t, client, vip, true).send(t, labMTU)
		if got, ttls := rx.receive(t, 1); got != 1 || ttls[63] != 1 {
			t.Errorf("IPv%d, %d bytes with DF: %d datagrams reached the target, TTLs %v; want 1, TTL 63", rx.fam, labMTU, got, ttls)
		}
	}
	if now := read(); now != start {
		t.Errorf("datagrams of the MTU: lb's stack counted %+v, then %+v; want them redirected past it", start, now)
	}
	c := mustCounters(t, d)
	if c.Actions[ActionRedirect].Packets != 2 || c.Actions[ActionTooBig].Packets != 0 {
		t.Errorf("datagrams of the MTU: actions %+v, want 2 redirected, none too big", c.Actions)
	}

	// 1500 bytes without DF (IPv4): lb's stack fragments it.
	before := read()
	dialSized(t, client, labVIP4, false).send(t, 1500)
	if got, _ := rx4.receive(t, 1); got != 1 {
		t.Errorf("IPv4, 1500 bytes without DF: %d datagrams reached the target, want 1 (fragmented by lb)", got)
	}
	after := read()
	if after.lab.fwd4 != before.lab.fwd4+1 || after.lab.forw4 != before.lab.forw4+1 || after.fragCreates != before.fragCreates+2 {
		t.Errorf("IPv4, 1500 bytes without DF: lb's stack went from %+v to %+v; want it forwarded once in two fragments", before, after)
	}

	// 1281 bytes with DF: ICMP back from lb's stack, nothing forwarded.
	for _, tc := range []struct {
		rx          *receiver
		vip         netip.Addr
		origin, typ uint8
	}{{rx4, labVIP4, unix.SO_EE_ORIGIN_ICMP, 3 /* destination unreachable */}, {rx6, labVIP6, unix.SO_EE_ORIGIN_ICMP6, 2 /* packet too big */}} {
		before := read()
		s := dialSized(t, client, tc.vip, true)
		s.send(t, labMTU+1)
		e := s.icmpError(t, 3*time.Second)
		wantCode := map[bool]uint8{true: 4, false: 0}[tc.vip.Is4()] // IPv4: fragmentation needed
		if e == nil || e.Origin != tc.origin || e.Type != tc.typ || e.Code != wantCode || e.Info != labMTU || e.Errno != uint32(unix.EMSGSIZE) {
			t.Errorf("IPv%d, %d bytes with DF: ICMP error %+v; want origin %d, type %d, code %d, MTU %d, EMSGSIZE", tc.rx.fam, labMTU+1, e, tc.origin, tc.typ, wantCode, labMTU)
		}
		if !tc.rx.nothing(200 * time.Millisecond) {
			t.Errorf("IPv%d, %d bytes with DF: a datagram reached the target", tc.rx.fam, labMTU+1)
		}
		after := read()
		want := before
		// ForwDatagrams and Ip6OutForwDatagrams move by 1 here too: on
		// 6.18 the stack counts a datagram it starts to forward, before
		// the MTU check. Its forward hook, after the check,
		// must not see it.
		want.lab.forw4, want.lab.forw6 = after.lab.forw4, after.lab.forw6
		if tc.vip.Is4() {
			want.unreach++
		} else {
			want.packetTooBig++
		}
		if after != want {
			t.Errorf("IPv%d, %d bytes with DF: lb's stack went from %+v to %+v; want one ICMP error, nothing in the forward hook", tc.rx.fam, labMTU+1, before, after)
		}
	}
	c = mustCounters(t, d)
	if c.Actions[ActionRedirect].Packets != 2 || c.Actions[ActionTooBig] != (Count{Packets: 3, Bytes: 1500 + 2*(labMTU+1)}) {
		t.Errorf("actions %+v, want 2 redirected, 3 too big (%d bytes)", c.Actions, 1500+2*(labMTU+1))
	}
	t.Logf("lb's stack from %+v to %+v; actions %+v", start, read(), c.Actions)
}
