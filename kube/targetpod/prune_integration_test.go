package targetpod_test

import (
	"context"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/internal/targetbfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// The pruning lab: a pod (net1: .11) and two SLLBRs (eth0: .1 and .2, each
// running a bfd.Server with sessions to the pod's two addresses) on one
// bridge, in a switch namespace (ports ppod, plb1, plb2).
const (
	pruneInterval   = 100 * time.Millisecond
	pruneMultiplier = 3
	pruneDetection  = pruneMultiplier * pruneInterval
)

var (
	pruneSubnets = []netip.Prefix{netip.MustParsePrefix("169.111.100.0/24"), netip.MustParsePrefix("fd00:111::/64")}
	// sllbrAddrs are each SLLBR's addresses, IPv4 then IPv6.
	sllbrAddrs = map[string][2]netip.Addr{
		"lb1": {netip.MustParseAddr("169.111.100.1"), netip.MustParseAddr("fd00:111::1")},
		"lb2": {netip.MustParseAddr("169.111.100.2"), netip.MustParseAddr("fd00:111::2")},
	}
	podAddrs = [2]netip.Addr{netip.MustParseAddr("169.111.100.11"), netip.MustParseAddr("fd00:111::11")}
)

type pruneLab struct {
	t        *testing.T
	sw, pod  string
	lbs      map[string]string      // lb1, lb2 -> namespace
	servers  map[string]*bfd.Server // the SLLBRs' BFD
	runner   *targetbfd.Runner
	counters *targetbfd.Counters

	mu     sync.Mutex
	status string // the pod's status annotation as last written
}

func newPruneLab(t *testing.T) *pruneLab {
	require.Root(t)
	require.Programs(t, "ip", "nft")
	l := &pruneLab{t: t, lbs: map[string]string{}, servers: map[string]*bfd.Server{}, counters: targetbfd.NewCounters()}
	l.sw, _ = netns.New(t, "sllbrd-prune-sw")
	l.pod, _ = netns.New(t, "sllbrd-prune-pod")
	cmds := [][]string{{l.sw, "link add br0 type bridge stp_state 0"}, {l.sw, "link set br0 up"}, {l.pod, "link set lo up"},
		{l.pod, "link add net1 type veth peer name ppod netns " + l.sw}, {l.sw, "link set ppod master br0 up"},
		{l.pod, "addr add " + podAddrs[0].String() + "/24 dev net1"}, {l.pod, "addr add " + podAddrs[1].String() + "/64 dev net1 nodad"},
		{l.pod, "link set net1 up"}}
	for _, lb := range []string{"lb1", "lb2"} {
		ns, _ := netns.New(t, "sllbrd-prune-"+lb)
		l.lbs[lb] = ns
		a := sllbrAddrs[lb]
		cmds = append(cmds, []string{ns, "link set lo up"}, []string{ns, "link add eth0 type veth peer name p" + lb + " netns " + l.sw},
			[]string{l.sw, "link set p" + lb + " master br0 up"}, []string{ns, "addr add " + a[0].String() + "/24 dev eth0"},
			[]string{ns, "addr add " + a[1].String() + "/64 dev eth0 nodad"}, []string{ns, "link set eth0 up"})
	}
	for _, c := range cmds {
		netns.Run(t, append([]string{"ip", "-n", c[0]}, strings.Fields(c[1])...)...)
	}
	for _, lb := range []string{"lb1", "lb2"} {
		l.servers[lb] = l.sllbr(lb)
	}
	return l
}

// sllbr runs lb's BFD server, with a session to each of the pod's
// addresses, until the test ends.
func (l *pruneLab) sllbr(lb string) *bfd.Server {
	srv := bfd.NewServer()
	for _, cfg := range l.sessions(lb) {
		if err := srv.Add(cfg); err != nil {
			l.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- netns.Do(l.lbs[lb], func() error { return srv.Run(ctx) }) }()
	l.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			l.t.Errorf("%s's BFD server: %v", lb, err)
		}
	})
	return srv
}

func (l *pruneLab) sessions(lb string) []bfd.SessionConfig {
	var out []bfd.SessionConfig
	for i, peer := range podAddrs {
		out = append(out, bfd.SessionConfig{Peer: peer, Local: sllbrAddrs[lb][i], Interface: "eth0",
			DesiredMinTx: pruneInterval, RequiredMinRx: pruneInterval, DetectMultiplier: pruneMultiplier})
	}
	return out
}

// start runs the pod's agent as the node daemon runs it (the real
// targetnet over the pod's namespace, a targetbfd.Runner in it), fed the
// pod with the Gateway (liveness on) over both SLLBRs.
func (l *pruneLab) start() {
	f, err := os.Open(filepath.Join(netns.Dir, l.pod))
	if err != nil {
		l.t.Fatal(err)
	}
	kernel, err := targetnet.NewNetlinkKernel(int(f.Fd()))
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { kernel.Close() })
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pod", l.pod)
	l.runner = targetbfd.NewRunner(f, targetbfd.WithLogger(log), targetbfd.WithCounters(l.counters))
	write := func(_ context.Context, v string) error {
		l.mu.Lock()
		l.status = v
		l.mu.Unlock()
		return nil
	}
	agent := targetpod.NewPodAgent(targetpod.NodeAgent("n1"), targetnet.New(kernel), write, targetpod.WithLogger(log),
		targetpod.WithLiveness(l.runner))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{agent.Run, l.runner.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				l.t.Errorf("run: %v", err)
			}
		})
	}
	l.t.Cleanup(func() { cancel(); wg.Wait() })
	g := targetpod.Gateway{Name: "sllb-a", Table: 50000, Subnets: pruneSubnets,
		VIPs:     []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32"), netip.MustParsePrefix("2001:db8::1/128")},
		Liveness: &targetpod.GatewayLiveness{IntervalMilliseconds: pruneInterval.Milliseconds(), Multiplier: pruneMultiplier}}
	for _, lb := range []string{"lb1", "lb2"} {
		g.NextHops.IPv4 = append(g.NextHops.IPv4, sllbrAddrs[lb][0])
		g.NextHops.IPv6 = append(g.NextHops.IPv6, sllbrAddrs[lb][1])
	}
	d := targetpod.Desired{Version: targetpod.SchemaVersion, Generation: 1, Gateways: []targetpod.Gateway{g}}
	agent.Seen(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-1",
		Annotations: map[string]string{kube.AnnotationTargetNetwork: d.Marshal()}}})
}

// routed returns the next hops of the pod's routes in the Gateway's table
// (both families), as the kernel lists them (none before the table
// exists).
func (l *pruneLab) routed() []netip.Addr {
	var out []netip.Addr
	for _, fam := range []string{"-4", "-6"} {
		list, _ := exec.Command("ip", "-n", l.pod, fam, "route", "show", "table", "50000").Output()
		fields := strings.Fields(string(list))
		for i, f := range fields {
			if f == "via" && i+1 < len(fields) {
				out = append(out, netip.MustParseAddr(fields[i+1]))
			}
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// hops returns the addresses of the given SLLBRs, sorted.
func hops(lbs ...string) []netip.Addr {
	var out []netip.Addr
	for _, lb := range lbs {
		out = append(out, sllbrAddrs[lb][0], sllbrAddrs[lb][1])
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// waitRouted waits until the pod's routes go through exactly the given
// SLLBRs, and returns how long it took since from.
func (l *pruneLab) waitRouted(what string, from time.Time, lbs ...string) time.Duration {
	l.t.Helper()
	want := hops(lbs...)
	for end := time.Now().Add(deadline); ; time.Sleep(5 * time.Millisecond) {
		if got := l.routed(); slices.Equal(got, want) {
			return time.Since(from)
		} else if time.Now().After(end) {
			l.t.Fatalf("%s: the pod's routes via %v, not %v within %v", what, got, want, deadline)
		}
	}
}

// gatewayStatus returns the status last written and its one Gateway.
func (l *pruneLab) gatewayStatus() (targetpod.Status, targetpod.GatewayStatus) {
	l.t.Helper()
	l.mu.Lock()
	v := l.status
	l.mu.Unlock()
	s, err := targetpod.ParseStatus(v)
	if err != nil || len(s.Gateways) != 1 {
		l.t.Fatalf("status %q: %v", v, err)
	}
	return s, s.Gateways[0]
}

// checkStatus checks that the status says ready, with the given SLLBRs'
// next hops in the kernel and the others' down (or, all, every one kept
// with both families all down).
func (l *pruneLab) checkStatus(what string, routed, down []string, all bool) {
	l.t.Helper()
	var s targetpod.Status
	var g targetpod.GatewayStatus
	ok := func() bool {
		s, g = l.gatewayStatus()
		got := slices.Concat(g.NextHops.IPv4, g.NextHops.IPv6)
		slices.SortFunc(got, netip.Addr.Compare)
		var gotDown []netip.Addr
		if g.DownNextHops != nil {
			gotDown = slices.Concat(g.DownNextHops.IPv4, g.DownNextHops.IPv6)
			slices.SortFunc(gotDown, netip.Addr.Compare)
		}
		return slices.Equal(got, hops(routed...)) && slices.Equal(gotDown, hops(down...)) && (len(g.AllNextHopsDown) == 2) == all
	}
	for end := time.Now().Add(deadline); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			l.t.Fatalf("%s: status gateway %+v, want next hops of %v, down %v, all down %v", what, g, routed, down, all)
		}
	}
	if !s.Ready || s.ObservedGeneration != 1 || len(s.Errors) != 0 {
		l.t.Errorf("%s: status %+v: want generation 1 applied, ready", what, s)
	}
}

// TestIntegrationTargetLeavesOutDownNextHops: the pod's agent, its BFD
// runner and targetnet on the real kernel, both families, against two
// SLLBRs' BFD servers. When one SLLBR stops answering (its link down, its
// namespace dropping everything) its next hops leave the pod's routes
// within the detection time plus an apply, and come back once its sessions
// are Up again; one that takes its sessions down (AdminDown: it is
// stopping) leaves at once. When both stop, both stay (never no next
// hop), and the status and the counts say so. The pod stays ready
// throughout.
func TestIntegrationTargetLeavesOutDownNextHops(t *testing.T) {
	l := newPruneLab(t)
	l.start()
	l.waitRouted("start", time.Now(), "lb1", "lb2")
	for end := time.Now().Add(deadline); l.runner.Stats().Sessions[bfd.StateUp] != 4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the pod's sessions: %+v, want 4 Up", l.runner.Stats().Sessions)
		}
	}
	l.checkStatus("start", []string{"lb1", "lb2"}, nil, false)

	faults := []struct {
		name        string
		fail, mend  func()
		withinGrace bool // left out at once (AdminDown), not after a detection time
	}{
		{"lb1's link down", func() { l.sw1("link set plb1 down") }, func() { l.sw1("link set plb1 up") }, false},
		{"lb1's namespace drops everything", func() {
			netns.In(t, l.lbs["lb1"], "nft", "add table inet drop-all; add chain inet drop-all in { type filter hook input priority 0; policy drop; }; "+
				"add chain inet drop-all out { type filter hook output priority 0; policy drop; }")
		}, func() { netns.In(t, l.lbs["lb1"], "nft", "delete table inet drop-all") }, false},
		{"lb1 stopping (AdminDown)", func() {
			for _, cfg := range l.sessions("lb1") {
				if err := l.servers["lb1"].Remove(cfg.Key()); err != nil {
					t.Fatal(err)
				}
			}
		}, func() {
			for _, cfg := range l.sessions("lb1") {
				if err := l.servers["lb1"].Add(cfg); err != nil {
					t.Fatal(err)
				}
			}
		}, true},
	}
	for _, f := range faults {
		at := time.Now()
		f.fail()
		took := l.waitRouted(f.name, at, "lb2")
		l.checkStatus(f.name, []string{"lb2"}, []string{"lb1"}, false)
		t.Logf("%s: the pod's routes via lb2 only after %v (detection %v)", f.name, took.Round(time.Millisecond), pruneDetection)
		limit := pruneDetection + time.Second // the detection, an apply, a loaded machine
		if f.withinGrace {
			limit = time.Second
		}
		if took > limit {
			t.Errorf("%s: lb1 left the routes after %v, want within %v", f.name, took, limit)
		}
		if s := l.runner.Stats(); s.LeftOut != 2 || s.Sessions[bfd.StateUp] != 2 || len(l.runner.Sessions()) != 4 {
			t.Errorf("%s: stats %+v: want lb1's 2 next hops left out, their sessions kept", f.name, s)
		}
		at = time.Now()
		f.mend()
		took = l.waitRouted(f.name+", mended", at, "lb1", "lb2")
		l.checkStatus(f.name+", mended", []string{"lb1", "lb2"}, nil, false)
		t.Logf("%s, mended: the pod's routes via both again after %v (BFD sends once a second until Up)", f.name, took.Round(time.Millisecond))
	}

	// Both SLLBRs unreachable: every next hop of both families down, all
	// kept; each family counted once.
	at := time.Now()
	l.sw1("link set plb1 down")
	l.sw1("link set plb2 down")
	l.checkStatus("both down", []string{"lb1", "lb2"}, nil, true)
	t.Logf("both SLLBRs unreachable: both kept after %v", time.Since(at).Round(time.Millisecond))
	if got := l.routed(); !slices.Equal(got, hops("lb1", "lb2")) {
		t.Errorf("both down: the pod's routes via %v, want both kept", got)
	}
	if s := l.runner.Stats(); s.AllDown != 2 || s.LeftOut != 0 {
		t.Errorf("both down: stats %+v: want both families counted all down once, none left out", s)
	}
	l.sw1("link set plb1 up")
	l.checkStatus("lb1 back", []string{"lb1"}, []string{"lb2"}, false)
	if got := l.routed(); !slices.Equal(got, hops("lb1")) {
		t.Errorf("lb1 back: the pod's routes via %v, want lb1 only", got)
	}
	l.sw1("link set plb2 up")
	l.waitRouted("both back", time.Now(), "lb1", "lb2")
	l.checkStatus("both back", []string{"lb1", "lb2"}, nil, false)
	if s := l.runner.Stats(); s.AllDown != 2 || s.ServerFailures != 0 || s.SessionFailures != 0 {
		t.Errorf("end: stats %+v", s)
	}
}

// sw1 runs one ip(8) command in the switch's namespace.
func (l *pruneLab) sw1(args string) {
	l.t.Helper()
	netns.Run(l.t, append([]string{"ip", "-n", l.sw}, strings.Fields(args)...)...)
}
