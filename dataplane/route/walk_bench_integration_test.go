package route

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// BenchmarkForward measures what the kernel's walk of the policy rules
// costs a forwarded packet, with N endpoints' rules (both families) and a
// return path programmed by a Reconciler in a router namespace, and the
// skip rules in place or deleted (as before they existed). A client
// namespace sends 64-byte UDP packets through the router to a sink
// namespace that drops them on arrival (frames to a MAC it does not own);
// the softirq work of the whole path runs in the sending thread, so ns/op
// is the cost of one packet sent, forwarded and dropped. Kinds:
//
//   - unmarked: from a VIP (a target's reply), routed by the return path:
//     walks every fwmark rule and the catch-all before reaching it, unless
//     the skip rule jumps there;
//   - marked: to a VIP, given the mark of endpoint N/2 by an nftables rule
//     in the router (as the kernel path does), walks the rules up to its
//     own; the skip rule does not apply to it, but with IPv4's rp_filter=2
//     (sllbrd's setting) the source validation's lookup is unmarked and
//     does (src_valid_mark is 0).
//
// The router runs IPv4 with rp_filter=2, as sllbrd sets it.
func BenchmarkForward(b *testing.B) {
	require.Root(b)
	require.Programs(b, "ip", "nft")
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			l := newForwardLab(b, n)
			for _, kind := range []string{"unmarked", "marked"} {
				l.mark(b, kind == "marked")
				for _, fam := range []Family{IPv4, IPv6} {
					for _, skip := range []bool{true, false} {
						l.skipRules(b, skip)
						name := fmt.Sprintf("%s/%s/skip=%v", kind, fam, skip)
						b.Run(name, func(b *testing.B) { l.send(b, fam, kind == "marked") })
					}
				}
			}
		})
	}
}

// forwardLab is the client, router and sink namespaces of BenchmarkForward.
type forwardLab struct {
	client, router string
	mid            EndpointRoute // the marked packets' endpoint, per family below
	mid6           EndpointRoute
	skipping       bool
}

func newForwardLab(b *testing.B, n int) *forwardLab {
	client, _ := netns.New(b, "sllbrd-k-fwc")
	router, fd := netns.New(b, "sllbrd-k-fwr")
	sink, _ := netns.New(b, "sllbrd-k-fws")
	in := func(ns, cmds string) {
		for _, c := range strings.Split(cmds, "; ") {
			netns.Run(b, append([]string{"ip", "-n", ns}, strings.Fields(c)...)...)
		}
	}
	in(router, "link add r0 type veth peer name c0 netns "+client+"; link add l0 type veth peer name p0 netns "+sink+
		"; link add l1 type veth peer name p1 netns "+sink)
	in(client, "addr add 10.7.0.2/24 dev c0; addr add fd07::2/64 dev c0 nodad; addr add 20.0.0.1/32 dev lo; addr add 2000::1/128 dev lo"+
		"; link set lo up; link set c0 up; route add default via 10.7.0.1; -6 route add default via fd07::1"+
		"; neigh replace 10.7.0.1 lladdr 02:00:00:00:07:01 dev c0 nud permanent; neigh replace fd07::1 lladdr 02:00:00:00:07:01 dev c0 nud permanent")
	in(router, "link set r0 address 02:00:00:00:07:01; addr add 10.7.0.1/24 dev r0; addr add fd07::1/64 dev r0 nodad"+
		"; addr add 10.1.0.1/16 dev l0; addr add fd01::1/64 dev l0 nodad; addr add 10.2.0.1/24 dev l1; addr add fd02::1/64 dev l1 nodad"+
		"; link set r0 up; link set l0 up; link set l1 up; route add 20.0.0.0/24 via 10.7.0.2; -6 route add 2000::/64 via fd07::2"+
		"; neigh replace 10.2.0.254 lladdr 02:00:00:00:99:99 dev l1 nud permanent; neigh replace fd02::fe lladdr 02:00:00:00:99:99 dev l1 nud permanent")
	in(sink, "link set p0 up; link set p1 up")
	netns.In(b, router, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
		"net.ipv4.conf.all.rp_filter=2", "net.ipv4.conf.default.rp_filter=2", "net.ipv4.conf.r0.rp_filter=2")
	rc, err := New(newKernel(b, fd))
	if err != nil {
		b.Fatal(err)
	}
	eps := benchEndpoints(n)
	paths := []ReturnPath{{VIPs: addrs("20.0.0.1", "2000::1"), Table: DefaultRanges.Tables.Max,
		Gateways: []Nexthop{gw("10.2.0.254", "l1"), gw("fd02::fe", "l1")}}}
	if err := reconcile(rc, eps, paths); err != nil {
		b.Fatal(err)
	}
	l := &forwardLab{client: client, router: router, mid: eps[2*(n/2)], mid6: eps[2*(n/2)+1], skipping: true}
	for _, e := range []EndpointRoute{l.mid, l.mid6} {
		in(router, fmt.Sprintf("neigh replace %s lladdr 02:00:00:00:99:98 dev l0 nud permanent", e.Via))
	}
	return l
}

// skipRules deletes or adds back the skip rules, both families.
func (l *forwardLab) skipRules(b *testing.B, on bool) {
	if on == l.skipping {
		return
	}
	op := "del"
	if on {
		op = "add"
	}
	for _, fam := range []string{"-4", "-6"} {
		netns.Run(b, "ip", "-n", l.router, fam, "rule", op, "pref", "9999", "not", "fwmark", "0x10000/0xffff0000", "goto", "10002")
	}
	l.skipping = on
}

// mark sets (or removes) the router's nftables rule that gives packets to
// the VIPs the middle endpoint's mark.
func (l *forwardLab) mark(b *testing.B, on bool) {
	_ = exec.Command("ip", "netns", "exec", l.router, "nft", "delete", "table", "inet", "routebench").Run()
	if !on {
		return
	}
	rules := fmt.Sprintf(`table inet routebench {
	chain pre {
		type filter hook prerouting priority mangle;
		ip daddr 20.0.0.100 meta mark set %#x
		ip6 daddr 2000::100 meta mark set %#x
	}
}`, l.mid.Mark, l.mid6.Mark)
	cmd := exec.Command("ip", "netns", "exec", l.router, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("nft: %v: %s", err, out)
	}
}

// send sends b.N packets from the client through the router and checks
// that the router forwarded at least 99 % of them where they belong.
func (l *forwardLab) send(b *testing.B, fam Family, marked bool) {
	src, dst, out := netip.MustParseAddrPort("20.0.0.1:5000"), netip.MustParseAddrPort("10.9.9.9:9"), "l1"
	if fam == IPv6 {
		src, dst = netip.MustParseAddrPort("[2000::1]:5000"), netip.MustParseAddrPort("[2001:db8:99::9]:9")
	}
	if marked {
		src, dst, out = netip.MustParseAddrPort("10.7.0.2:5000"), netip.MustParseAddrPort("20.0.0.100:9"), "l0"
		if fam == IPv6 {
			src, dst = netip.MustParseAddrPort("[fd07::2]:5000"), netip.MustParseAddrPort("[2000::100]:9")
		}
	}
	var sock int
	netns.DoOrFail(b, l.client, func() error {
		var err error
		sock, err = udpSocket(src, dst)
		return err
	})
	defer unix.Close(sock)
	payload := make([]byte, 64-8-20)
	before := txPackets(b, l.router, out)
	for b.Loop() {
		if _, err := unix.Write(sock, payload); err != nil {
			b.Fatal(err)
		}
	}
	if got := txPackets(b, l.router, out) - before; float64(got) < 0.99*float64(b.N) {
		b.Fatalf("%d packets sent, %d forwarded out of %s", b.N, got, out)
	}
}

// udpSocket returns a UDP socket bound to src and connected to dst.
func udpSocket(src, dst netip.AddrPort) (int, error) {
	af := unix.AF_INET
	sa := func(a netip.AddrPort) unix.Sockaddr {
		return &unix.SockaddrInet4{Addr: a.Addr().As4(), Port: int(a.Port())}
	}
	if src.Addr().Is6() {
		af = unix.AF_INET6
		sa = func(a netip.AddrPort) unix.Sockaddr {
			return &unix.SockaddrInet6{Addr: a.Addr().As16(), Port: int(a.Port())}
		}
	}
	s, err := unix.Socket(af, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(s, sa(src)); err != nil {
		unix.Close(s)
		return -1, fmt.Errorf("bind %v: %w", src, err)
	}
	if err := unix.Connect(s, sa(dst)); err != nil {
		unix.Close(s)
		return -1, fmt.Errorf("connect %v: %w", dst, err)
	}
	return s, nil
}

// txPackets reads the packets dev sent in namespace ns.
func txPackets(b *testing.B, ns, dev string) uint64 {
	var links []struct {
		Stats struct {
			TX struct {
				Packets uint64 `json:"packets"`
			} `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(netns.Run(b, "ip", "-n", ns, "-j", "-s", "link", "show", "dev", dev)), &links); err != nil || len(links) != 1 {
		b.Fatalf("ip -s link show %s: %v", dev, err)
	}
	return links[0].Stats.TX.Packets
}
