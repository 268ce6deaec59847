package bpfpath

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// capture is an AF_PACKET socket on an interface that keeps every frame
// it receives.
type capture struct{ fd int }

func captureOn(t *testing.T, ns, ifname string) *capture {
	t.Helper()
	c := &capture{fd: -1}
	netns.DoOrFail(t, ns, func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		proto := int(htons(unix.ETH_P_ALL))
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, proto)
		if err != nil {
			return err
		}
		c.fd = fd
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifc.Index})
	})
	t.Cleanup(func() { unix.Close(c.fd) })
	return c
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// datagrams returns the Ethernet addresses of the frames received so far
// that carry UDP to labPort, counted.
func (c *capture) datagrams(t *testing.T) map[[12]byte]int {
	t.Helper()
	out := map[[12]byte]int{}
	buf := make([]byte, 2048)
	for {
		n, _, err := unix.Recvfrom(c.fd, buf, unix.MSG_DONTWAIT)
		if err == unix.EAGAIN {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		f := buf[:n]
		var l4 []byte
		switch {
		case n >= 14+20+4 && binary.BigEndian.Uint16(f[12:]) == etherIPv4 && f[14+9] == protoUDP:
			l4 = f[14+int(f[14]&0x0f)*4:]
		case n >= 14+40+4 && binary.BigEndian.Uint16(f[12:]) == etherIPv6 && f[14+6] == protoUDP:
			l4 = f[14+40:]
		default:
			continue
		}
		if len(l4) >= 4 && binary.BigEndian.Uint16(l4[2:]) == labPort {
			out[[12]byte(f[:12])]++
		}
	}
}

// wireFrame is an Ethernet frame from src to dst (MACs) of a UDP datagram
// from from to to with TTL (hop limit) ttl and payload, its checksums
// complete, as it arrives from a wire. (A local socket's frames through a
// veth carry an unfinished UDP checksum, which the skb's CHECKSUM_PARTIAL
// vouches for; a native XDP program on the veth sees and redirects the
// bytes alone.)
func wireFrame(dst, src net.HardwareAddr, from, to netip.AddrPort, ttl uint8, payload []byte) []byte {
	udp := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(udp[0:], from.Port())
	binary.BigEndian.PutUint16(udp[2:], to.Port())
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	udp = append(udp, payload...)
	// The pseudo-header's sum, then the datagram's.
	var sum uint32
	add := func(b []byte) {
		for i := 0; i < len(b); i += 2 {
			w := uint32(b[i]) << 8
			if i+1 < len(b) {
				w |= uint32(b[i+1])
			}
			sum += w
		}
	}
	add(from.Addr().AsSlice())
	add(to.Addr().AsSlice())
	sum += protoUDP + uint32(len(udp))
	add(udp)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	if c := ^uint16(sum); c != 0 {
		binary.BigEndian.PutUint16(udp[6:], c)
	} else {
		binary.BigEndian.PutUint16(udp[6:], 0xffff)
	}
	var f []byte
	if from.Addr().Is4() {
		ip := make([]byte, 20, 20+len(udp))
		ip[0], ip[6], ip[8], ip[9] = 0x45, 0x40, ttl, protoUDP
		binary.BigEndian.PutUint16(ip[2:], uint16(20+len(udp)))
		copy(ip[12:], from.Addr().AsSlice())
		copy(ip[16:], to.Addr().AsSlice())
		binary.BigEndian.PutUint16(ip[10:], ipv4Checksum(ip))
		f = ether(etherIPv4, append(ip, udp...), nil)
	} else {
		ip := make([]byte, 40, 40+len(udp))
		ip[0], ip[6], ip[7] = 0x60, protoUDP, ttl
		binary.BigEndian.PutUint16(ip[4:], uint16(len(udp)))
		copy(ip[8:], from.Addr().AsSlice())
		copy(ip[24:], to.Addr().AsSlice())
		f = ether(etherIPv6, append(ip, udp...), nil)
	}
	copy(f[0:6], dst)
	copy(f[6:12], src)
	return f
}

// inject sends n datagrams to vip, TTL 64, as frames from the client's c0
// to lb's l0 (MAC l0), through an AF_PACKET socket.
func inject(t *testing.T, client string, l0 net.HardwareAddr, vip netip.Addr, n int) {
	t.Helper()
	netns.DoOrFail(t, client, func() error {
		c0, err := net.InterfaceByName("c0")
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		from := netip.MustParseAddr("10.77.1.1")
		if vip.Is6() {
			from = netip.MustParseAddr("fd77:1::1")
		}
		to := &unix.SockaddrLinklayer{Ifindex: c0.Index, Halen: 6}
		copy(to.Addr[:], l0)
		for i := range n {
			f := wireFrame(l0, c0.HardwareAddr, netip.AddrPortFrom(from, 40000), netip.AddrPortFrom(vip, labPort), 64, []byte(fmt.Sprintf("datagram %d", i)))
			if err := unix.Sendto(fd, f, 0, to); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
}

// passEverything attaches an XDP program that passes every frame to an
// interface, in driver mode: on a veth it makes the interface's peer take
// XDP frames (the veth runs NAPI for it).
func passEverything(t *testing.T, ns, ifname string) {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "Apache-2.0",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdpPass), asm.Return()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	netns.DoOrFail(t, ns, func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifc.Index, Flags: link.XDPDriverMode})
		if err != nil {
			return err
		}
		t.Cleanup(func() { l.Close() })
		return nil
	})
}

// TestIntegrationXDPThroughNamespaces runs the XDP program at lb's
// ingress from the client (with the tc program behind it) on the real
// kernel, and sends 50 UDP datagrams per family through it in each of
// three set-ups:
//
//   - generic mode (XDPAuto's choice on a veth): the XDP program
//     redirects them;
//   - driver mode, the egress veth's peer (the target's t0) with neither
//     an XDP program nor GRO: the egress takes no XDP frames, the XDP
//     program passes them, and the tc program redirects them;
//   - driver mode, an XDP program on t0: the XDP program redirects them.
//
// The datagrams are frames injected at the client's c0 with complete
// checksums, as from a wire (see XDPAuto for a local sender's).
//
// Every datagram reaches the target with TTL or hop limit 63, in frames
// from lb's l1 to t0's MAC, and lb's stack (its forward hook, its
// ForwDatagrams) sees none of them; the counters say which program
// redirected each one.
func TestIntegrationXDPThroughNamespaces(t *testing.T) {
	require.Root(t)
	require.Programs(t, "ip", "nft")
	d := load(t, Options{})
	client, lb, target := threeNamespaces(t)
	if _, err := d.Configure(labInput(t)); err != nil {
		t.Fatal(err)
	}
	var l0, l1, t0 *net.Interface
	netns.DoOrFail(t, target, func() (err error) { t0, err = net.InterfaceByName("t0"); return err })
	var tc *Attachment
	netns.DoOrFail(t, lb, func() (err error) {
		if l0, err = net.InterfaceByName("l0"); err != nil {
			return err
		}
		if l1, err = net.InterfaceByName("l1"); err != nil {
			return err
		}
		tc, err = d.Attach("l0")
		return err
	})
	t.Cleanup(func() { _ = tc.Detach() })
	// The next hops as sllbrd fills them: the target's MAC from lb's
	// neighbour table (here, t0's own), the interface's MTU and MAC; in
	// lb's namespace, where SetNextHops asks which interfaces take XDP
	// frames.
	setHops := func() {
		netns.DoOrFail(t, lb, func() error {
			return d.SetNextHops([]NextHop{
				{Mark: labMark, Via: labTarget4, Ifindex: l1.Index, MTU: l1.MTU, MAC: t0.HardwareAddr, SrcMAC: l1.HardwareAddr},
				{Mark: labMark, Via: labTarget6, Ifindex: l1.Index, MTU: l1.MTU, MAC: t0.HardwareAddr, SrcMAC: l1.HardwareAddr}})
		})
	}
	setHops()
	attachXDP := func(mode XDPMode, want string) *Attachment {
		var a *Attachment
		netns.DoOrFail(t, lb, func() (err error) { a, err = d.AttachXDP("l0", mode); return err })
		t.Cleanup(func() { _ = a.Detach() })
		if a.Mode() != want {
			t.Fatalf("AttachXDP(l0, %d): mode %s, want %s", mode, a.Mode(), want)
		}
		return a
	}
	rx4, rx6 := listen(t, target, labVIP4), listen(t, target, labVIP6)
	var wantFrame [12]byte
	copy(wantFrame[0:6], t0.HardwareAddr)
	copy(wantFrame[6:12], l1.HardwareAddr)

	phase := func(name string, by Action) {
		t.Helper()
		cap := captureOn(t, target, "t0")
		before, counts := readLabCounts(t, lb), mustCounters(t, d)
		start := time.Now()
		for _, rx := range []*receiver{rx4, rx6} {
			inject(t, client, l0.HardwareAddr, map[int]netip.Addr{4: labVIP4, 6: labVIP6}[rx.fam], labDatagram)
			if got, ttls := rx.receive(t, labDatagram); got != labDatagram || ttls[63] != labDatagram {
				t.Errorf("%s, IPv%d: %d of %d datagrams reached the target, TTLs %v; want all, with TTL 63", name, rx.fam, got, labDatagram, ttls)
			}
		}
		elapsed := time.Since(start)
		after, now := readLabCounts(t, lb), mustCounters(t, d)
		if stack := (labCounts{fwd4: after.fwd4 - before.fwd4, fwd6: after.fwd6 - before.fwd6, forw4: after.forw4 - before.forw4, forw6: after.forw6 - before.forw6}); stack != (labCounts{}) {
			t.Errorf("%s: lb's stack counted %+v; want nothing (redirected past it)", name, stack)
		}
		var moved [numActions]uint64
		for a := range numActions {
			moved[a] = now.Actions[a].Packets - counts.Actions[a].Packets
		}
		if moved[by] != 2*labDatagram || moved[ActionRedirect]+moved[ActionXDPRedirect] != 2*labDatagram {
			t.Errorf("%s: actions moved by %v; want %d under %v, and no other redirect", name, moved, 2*labDatagram, by)
		}
		frames := cap.datagrams(t)
		if frames[wantFrame] != 2*labDatagram || len(frames) != 1 {
			t.Errorf("%s: frames at t0 by Ethernet addresses %x; want %d, all to %s from %s", name, frames, 2*labDatagram, t0.HardwareAddr, l1.HardwareAddr)
		}
		t.Logf("%s: %d datagrams per family in %v; actions moved by %v", name, labDatagram, elapsed.Round(time.Millisecond), moved)
	}

	// On a veth, XDPAuto chooses generic mode.
	a := attachXDP(XDPAuto, "xdp-generic")
	netns.DoOrFail(t, lb, func() error {
		if _, err := d.AttachXDP("l0", XDPGeneric); err == nil || !strings.Contains(err.Error(), "attached already") {
			return fmt.Errorf("attaching XDP to l0 twice: %v, want an error", err)
		}
		if _, err := d.AttachXDP("lo", XDPAuto); err == nil || !strings.Contains(err.Error(), "not an Ethernet interface") {
			return fmt.Errorf("attaching XDP to lo: %v, want an error", err)
		}
		return nil
	})
	phase("generic mode", ActionXDPRedirect)
	// A local socket's datagrams too (their checksums unfinished, the
	// skb's CHECKSUM_PARTIAL going along).
	before := mustCounters(t, d).Actions[ActionXDPRedirect].Packets
	send(t, client, labVIP4, 10, 64)
	if got, ttls := rx4.receive(t, 10); got != 10 || ttls[63] != 10 || mustCounters(t, d).Actions[ActionXDPRedirect].Packets != before+10 {
		t.Errorf("generic mode, a local socket's datagrams: %d of 10 reached the target, TTLs %v; want all, TTL 63, redirected by XDP", got, ttls)
	}
	if err := a.Detach(); err != nil {
		t.Fatal(err)
	}
	attachXDP(XDPDriver, "xdp-driver")
	phase("driver mode, t0 takes no XDP frames", ActionRedirect)
	passEverything(t, target, "t0")
	setHops() // asks again: l1 takes XDP frames now
	phase("driver mode, an XDP program on t0", ActionXDPRedirect)
}
