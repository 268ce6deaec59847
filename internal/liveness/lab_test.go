package liveness

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// probeLab is a prober namespace with a bridge and target namespaces, each
// linked to the bridge by a veth pair (eth0 in the target), dual-stack.
//
//	(br0 10.23.0.1, fd00:23::1) P ── vI ═ eth0 tI (10.23.0.1I, fd00:23::1I)
type probeLab struct {
	p       string // the prober's namespace
	targets []labTarget
}

type labTarget struct {
	ns     string
	v4, v6 netip.Addr
}

var (
	labP4 = netip.MustParseAddr("10.23.0.1")
	labP6 = netip.MustParseAddr("fd00:23::1")
)

func newProbeLab(t *testing.T, n int) *probeLab {
	t.Helper()
	require.Root(t)
	require.Programs(t, "ip", "nft", "ping")
	l := &probeLab{}
	l.p, _ = netns.New(t, "sllbrd-live-p")
	batch(t, l.p,
		"link set lo up",
		"link add br0 type bridge stp_state 0 forward_delay 0 mcast_snooping 0",
		"link set br0 up",
		"address add 10.23.0.1/24 dev br0",
		"address add fd00:23::1/64 dev br0 nodad")
	for i := 1; i <= n; i++ {
		tg := labTarget{
			v4: netip.MustParseAddr(fmt.Sprintf("10.23.0.%d", 10+i)),
			v6: netip.MustParseAddr(fmt.Sprintf("fd00:23::%d", 10+i)),
		}
		tg.ns, _ = netns.New(t, "sllbrd-live-t")
		// A link set down and up again keeps its IPv6 address (by default
		// the kernel flushes it at down), as its IPv4 one.
		netns.In(t, tg.ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.keep_addr_on_down=1")
		port := fmt.Sprintf("v%d", i)
		netns.Run(t, "ip", "link", "add", "eth0", "netns", tg.ns, "type", "veth", "peer", "name", port, "netns", l.p)
		batch(t, l.p, "link set "+port+" master br0", "link set "+port+" up")
		batch(t, tg.ns,
			"link set lo up",
			"address add "+tg.v4.String()+"/24 dev eth0",
			"address add "+tg.v6.String()+"/64 dev eth0 nodad",
			"link set eth0 up")
		l.targets = append(l.targets, tg)
	}
	return l
}

// batch runs ip(8) commands in namespace ns.
func batch(t *testing.T, ns string, cmds ...string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "ip-batch")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(cmds, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	netns.Run(t, "ip", "-n", ns, "-batch", f.Name())
}

// changeLog records the changes a Prober reports.
type changeLog struct {
	mu sync.Mutex
	cs []Change
}

func (c *changeLog) add(cs []Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cs = append(c.cs, cs...)
}

func (c *changeLog) all() []Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Change{}, c.cs...)
}

// wait returns the first change of a to alive since index from, waiting
// until the deadline.
func (c *changeLog) wait(t *testing.T, a netip.Addr, alive bool, from int, within time.Duration) Change {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		cs := c.all()
		for _, ch := range cs[min(from, len(cs)):] {
			if ch.Addr == a && ch.Alive == alive {
				return ch
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v not %s within %v; changes %+v", a, aliveWord(alive), within, cs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startProber creates a Prober in namespace ns and runs it until the test
// ends.
func startProber(t *testing.T, ns string, opts ...Option) *Prober {
	t.Helper()
	var p *Prober
	netns.DoOrFail(t, ns, func() (err error) {
		p, err = New(opts...)
		return err
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return p
}

// lastUnanswered returns the sequence number and data of the latest probe
// sent to a that has no reply yet.
func lastUnanswered(t *testing.T, p *Prober, a netip.Addr) (uint16, uint64) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.byAddr[a]
	best := -1
	for i, sp := range p.ring {
		if e != nil && sp.gen == e.gen && sp.slot == e.slot && (best < 0 || sp.at > p.ring[best].at) {
			best = i
		}
	}
	if best < 0 {
		t.Fatalf("no unanswered probe of %v", a)
	}
	return uint16(best), p.ring[best].token
}

// echoReply is an echo reply message (ICMP checksum set; ICMPv6's left to
// the sender).
func echoReply(v6 bool, id, seq uint16, token uint64) []byte {
	var data [payloadLen]byte
	binary.BigEndian.PutUint64(data[:], token)
	msg := AppendEchoRequest(nil, v6, id, seq, data[:])
	toReply(msg, v6)
	return msg
}

// sendICMP sends msg from namespace ns over a raw ICMP or ICMPv6 socket
// (the kernel adds the IP header from ns's own address, and the ICMPv6
// checksum).
func sendICMP(t *testing.T, ns string, dst netip.Addr, msg []byte) {
	t.Helper()
	netns.DoOrFail(t, ns, func() error {
		family, proto := unix.AF_INET, unix.IPPROTO_ICMP
		if dst.Is6() {
			family, proto = unix.AF_INET6, unix.IPPROTO_ICMPV6
		}
		return sendRawOnce(family, proto, dst, msg)
	})
}

// spoof sends an IP packet with source src, built whole by the test, from
// namespace ns (IPPROTO_RAW: no header added, no checksum computed). For
// IPv6, badChecksum sends a wrong ICMPv6 checksum.
func spoof(t *testing.T, ns string, src, dst netip.Addr, msg []byte, badChecksum bool) {
	t.Helper()
	msg = append([]byte{}, msg...)
	var pkt []byte
	family := unix.AF_INET
	if dst.Is4() {
		pkt = ipv4Packet(src, dst, msg)
	} else {
		family = unix.AF_INET6
		binary.BigEndian.PutUint16(msg[2:], icmpv6Checksum(src, dst, msg))
		if badChecksum {
			msg[2] ^= 0x55
		}
		pkt = make([]byte, 40, 40+len(msg))
		pkt[0] = 0x60
		binary.BigEndian.PutUint16(pkt[4:], uint16(len(msg)))
		pkt[6], pkt[7] = 58, 64
		s, d := src.As16(), dst.As16()
		copy(pkt[8:24], s[:])
		copy(pkt[24:40], d[:])
		pkt = append(pkt, msg...)
	}
	netns.DoOrFail(t, ns, func() error { return sendRawOnce(family, unix.IPPROTO_RAW, dst, pkt) })
}

func sendRawOnce(family, proto int, dst netip.Addr, b []byte) error {
	fd, err := unix.Socket(family, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return fmt.Errorf("socket(%d, raw, %d): %w", family, proto, err)
	}
	defer unix.Close(fd)
	var sa unix.Sockaddr = &unix.SockaddrInet6{Addr: dst.As16()}
	if dst.Is4() {
		sa = &unix.SockaddrInet4{Addr: dst.As4()}
	}
	if err := unix.Sendto(fd, b, 0, sa); err != nil {
		return fmt.Errorf("sendto %v: %w", dst, err)
	}
	return nil
}

// waitStats polls p's counters until ok or the deadline.
func waitStats(t *testing.T, p *Prober, what string, ok func(Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !ok(p.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: stats %+v", what, p.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
