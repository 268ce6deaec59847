package bfd

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// Multihop lab: our Server in nsOurs and BIRD in nsPeer, on two subnets
// joined by a router namespace, so the BFD packets really cross a hop
// (their TTL arrives decremented).
const (
	mhOurs4, mhRouter4a, mhRouter4b, mhPeer4 = "10.98.1.1", "10.98.1.254", "10.98.2.254", "10.98.2.1"
	mhOurs6, mhRouter6a, mhRouter6b, mhPeer6 = "fd00:98:1::1", "fd00:98:1::fe", "fd00:98:2::fe", "fd00:98:2::1"
)

func newMultihopLab(t *testing.T) (l *birdLab, router string) {
	t.Helper()
	require.Lab(t)
	id := rand.IntN(1 << 20)
	l = &birdLab{}
	l.nsOurs, _ = netns.New(t, "sllbrd-bfdmh-a")
	router, _ = netns.New(t, "sllbrd-bfdmh-r")
	l.nsPeer, _ = netns.New(t, "sllbrd-bfdmh-b")
	type end struct{ ns, ifname, v4, v6 string }
	links := [][2]end{
		{{l.nsOurs, fmt.Sprintf("vmh%da", id), mhOurs4, mhOurs6}, {router, fmt.Sprintf("vmh%db", id), mhRouter4a, mhRouter6a}},
		{{router, fmt.Sprintf("vmh%dc", id), mhRouter4b, mhRouter6b}, {l.nsPeer, fmt.Sprintf("vmh%dd", id), mhPeer4, mhPeer6}},
	}
	for _, ns := range []string{l.nsOurs, router, l.nsPeer} {
		netns.Run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	for _, link := range links {
		a, b := link[0], link[1]
		netns.Run(t, "ip", "link", "add", a.ifname, "netns", a.ns, "type", "veth", "peer", "name", b.ifname, "netns", b.ns)
		for _, e := range []end{a, b} {
			netns.Run(t, "ip", "-n", e.ns, "addr", "add", e.v4+"/24", "dev", e.ifname)
			netns.Run(t, "ip", "-n", e.ns, "addr", "add", e.v6+"/64", "dev", e.ifname, "nodad")
			netns.Run(t, "ip", "-n", e.ns, "link", "set", e.ifname, "up")
		}
	}
	netns.In(t, router, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	for _, r := range [][3]string{{l.nsOurs, mhRouter4a, mhRouter6a}, {l.nsPeer, mhRouter4b, mhRouter6b}} {
		netns.Run(t, "ip", "-n", r[0], "route", "add", "default", "via", r[1])
		netns.Run(t, "ip", "-n", r[0], "-6", "route", "add", "default", "via", r[2])
	}
	l.startBirdConf(t, fmt.Sprintf(`router id %s;
protocol device {}
protocol bfd {
	multihop { min rx interval 300 ms; min tx interval 300 ms; multiplier 3; };
	neighbor %s local %s multihop on;
	neighbor %s local %s multihop on;
}
`, mhPeer4, mhOurs4, mhPeer4, mhOurs6, mhPeer6))
	return l, router
}

// setRouterCut drops (or stops dropping) multihop BFD in the router.
func setRouterCut(t *testing.T, router string, cut bool) {
	t.Helper()
	script := "delete table inet sllbrd_bfd_cut\n"
	if cut {
		script = "table inet sllbrd_bfd_cut {\n\tchain cut { type filter hook forward priority 0; udp dport 4784 drop; }\n}\n"
	}
	cmd := exec.Command("ip", "netns", "exec", router, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
}

// TestIntegrationBIRDMultihop: RFC 5883 sessions with BIRD two subnets away
// (through a router), IPv4 and IPv6: they come Up, negotiate the timers,
// detect a path failure and recover.
func TestIntegrationBIRDMultihop(t *testing.T) {
	l, router := newMultihopLab(t)
	l.runServerInNetns(t)
	sessions := []struct{ name, ours, peer string }{{"IPv4", mhOurs4, mhPeer4}, {"IPv6", mhOurs6, mhPeer6}}
	var cfgs []SessionConfig
	for _, s := range sessions {
		cfgs = append(cfgs, SessionConfig{Peer: netip.MustParseAddr(s.peer), Local: netip.MustParseAddr(s.ours), Multihop: true})
	}
	start := time.Now()
	keys := l.addAll(t, cfgs)
	for i, s := range sessions {
		ours, theirs := l.waitBoth(t, keys[i], s.ours, start, StateUp, "Up", 10*time.Second)
		t.Logf("%s multihop: Up after start: ours %v, BIRD %v", s.name, ours, theirs)
		l.waitNegotiated(t, keys[i], s.name)
		if st, _ := l.srv.Stats(keys[i]); st.Discards[DiscardBadTTL] != 0 {
			t.Errorf("%s: %d packets discarded for their TTL on a multihop session", s.name, st.Discards[DiscardBadTTL])
		}
	}
	cut := time.Now()
	setRouterCut(t, router, true)
	for i, s := range sessions {
		ours, theirs := l.waitBoth(t, keys[i], s.ours, cut, StateDown, "Down", 5*time.Second)
		t.Logf("%s multihop: path cut: Down detected: ours %v, BIRD %v (detection time 900ms)", s.name, ours, theirs)
		if e, _ := l.eventSince(keys[i], cut, StateDown); e.Diag != DiagControlDetectExpired || e.PeerAdminDown {
			t.Errorf("%s: down event %+v, want detection expiry", s.name, e.Event)
		}
	}
	restore := time.Now()
	setRouterCut(t, router, false)
	for i, s := range sessions {
		ours, theirs := l.waitBoth(t, keys[i], s.ours, restore, StateUp, "Up", 10*time.Second)
		t.Logf("%s multihop: path restored: Up again: ours %v, BIRD %v", s.name, ours, theirs)
	}
}
