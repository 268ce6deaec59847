package targetbfd_test

import (
	"context"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/targetbfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// The lab: the pod's namespace (net1: pod4, pod6), an SLLBR's (bridge br0:
// lb4, lb6, the Gateway's next hops) and a stranger's (x0: x4, x6) on the
// same bridge, which is not a next hop.
const (
	pod4, pod6 = "169.111.100.11", "fd00:111::11"
	lb4, lb6   = "169.111.100.1", "fd00:111::1"
	x4, x6     = "169.111.100.3", "fd00:111::3"
	interval   = 100 * time.Millisecond
	multiplier = 3
	// deadline bounds every wait, generously: a loaded 2-core machine.
	deadline = 30 * time.Second
)

var subnets = []netip.Prefix{netip.MustParsePrefix("169.111.100.0/24"), netip.MustParsePrefix("fd00:111::/64")}

type lab struct {
	pod, sllbr, stranger string
	// gateways are the Gateways with liveness of the pod, with what
	// targetnet applied there (its Result).
	gateways []targetbfd.Gateway
	events   eventLog
}

func newLab(t *testing.T) *lab {
	t.Helper()
	l := &lab{}
	l.pod, _ = netns.New(t, "sllbrd-tbfd-pod")
	l.sllbr, _ = netns.New(t, "sllbrd-tbfd-lb")
	l.stranger, _ = netns.New(t, "sllbrd-tbfd-x")
	for _, c := range [][]string{
		{l.pod, "link set lo up"}, {l.sllbr, "link set lo up"}, {l.stranger, "link set lo up"},
		{l.sllbr, "link add br0 type bridge stp_state 0"}, {l.sllbr, "link set br0 up"},
		{l.sllbr, "addr add " + lb4 + "/24 dev br0"}, {l.sllbr, "addr add " + lb6 + "/64 dev br0 nodad"},
		{l.pod, "link add net1 type veth peer name ppod netns " + l.sllbr},
		{l.stranger, "link add x0 type veth peer name px netns " + l.sllbr},
		{l.sllbr, "link set ppod master br0 up"}, {l.sllbr, "link set px master br0 up"},
		{l.pod, "addr add " + pod4 + "/24 dev net1"}, {l.pod, "addr add " + pod6 + "/64 dev net1 nodad"}, {l.pod, "link set net1 up"},
		{l.stranger, "addr add " + x4 + "/24 dev x0"}, {l.stranger, "addr add " + x6 + "/64 dev x0 nodad"}, {l.stranger, "link set x0 up"},
	} {
		netns.Run(t, append([]string{"ip", "-n", c[0]}, strings.Fields(c[1])...)...)
	}
	// What the pod's agent does first: targetnet applies the Gateway; the
	// BFD sessions follow what it holds.
	want := targetnet.Desired{Gateways: []targetnet.Gateway{{Name: "sllb-a", Table: 50000, Subnets: subnets,
		VIPs:     []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32"), netip.MustParsePrefix("2001:db8::1/128")},
		NextHops: []netip.Addr{netip.MustParseAddr(lb4), netip.MustParseAddr(lb6)}}}}
	var res targetnet.Result
	netns.DoOrFail(t, l.pod, func() error {
		k, err := targetnet.NewNetlinkKernel(0)
		if err != nil {
			return err
		}
		defer k.Close()
		res, err = targetnet.New(k).Apply(want)
		return err
	})
	g := res.Gateways[0]
	if len(g.NextHops) != 2 || g.Interfaces[targetnet.IPv4] != "net1" || g.Interfaces[targetnet.IPv6] != "net1" {
		t.Fatalf("targetnet applied %+v", res)
	}
	l.gateways = []targetbfd.Gateway{{Name: g.Name, Interval: interval, Multiplier: multiplier, Subnets: subnets,
		NextHops: g.NextHops, Interfaces: g.Interfaces}}
	return l
}

// server runs a bfd.Server in namespace ns until the test ends, with a
// session to each of the pod's addresses on ifname from locals.
func (l *lab) server(t *testing.T, who, ns, ifname string, locals ...string) *bfd.Server {
	t.Helper()
	srv := bfd.NewServer(bfd.WithEventHandler(func(e bfd.Event) { l.events.add(who, e) }))
	for i, peer := range []string{pod4, pod6} {
		cfg := bfd.SessionConfig{Peer: netip.MustParseAddr(peer), Local: netip.MustParseAddr(locals[i]), Interface: ifname,
			DesiredMinTx: interval, RequiredMinRx: interval, DetectMultiplier: multiplier}
		if err := srv.Add(cfg); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- netns.Do(ns, func() error { return srv.Run(ctx) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s's BFD server: %v", who, err)
		}
	})
	return srv
}

// runner runs a Runner in the pod's namespace until the returned stop.
func (l *lab) runner(t *testing.T) (r *targetbfd.Runner, stop func()) {
	t.Helper()
	f, err := os.Open(filepath.Join(netns.Dir, l.pod))
	if err != nil {
		t.Fatal(err)
	}
	r = targetbfd.NewRunner(f, targetbfd.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)).With("side", "pod")))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Runner.Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return r, stop
}

// TestIntegrationTargetSide: the pod's Runner and an SLLBR's bfd.Server
// bring their sessions Up both ways, IPv4 and IPv6, with the Gateway's
// timing, from the pod's address; a stranger on the same network gets
// nothing; removing liveness, and stopping, take the SLLBR's sessions
// Down with the pod's AdminDown.
func TestIntegrationTargetSide(t *testing.T) {
	l := newLab(t)
	lb := l.server(t, "sllbr", l.sllbr, "br0", lb4, lb6)
	x := l.server(t, "stranger", l.stranger, "x0", x4, x6)
	r, stop := l.runner(t)
	r.Set(l.gateways)

	lbKeys := []bfd.Key{{Peer: netip.MustParseAddr(pod4), Interface: "br0"}, {Peer: netip.MustParseAddr(pod6), Interface: "br0"}}
	wait(t, "the SLLBR's sessions Up", func() bool { return allState(lb, lbKeys, bfd.StateUp) })
	wait(t, "the pod's sessions Up", func() bool { return r.Stats().Sessions[bfd.StateUp] == 2 })
	for _, s := range r.Sessions() {
		local := map[string]string{lb4: pod4, lb6: pod6}[s.Key.Peer.String()]
		if s.Key.Interface != "net1" || s.Config.Local.String() != local || s.Config.DesiredMinTx != interval ||
			s.Config.RequiredMinRx != interval || s.Config.DetectMultiplier != multiplier {
			t.Errorf("pod's session %v: %+v, want on net1 from %s, %v x %d", s.Key, s.Config, local, interval, multiplier)
		}
	}
	for _, k := range lbKeys {
		// The SLLBR finds the pod dead after the pod's Detect Mult times the
		// agreed interval: Multiplier × Interval.
		if st, _ := lb.Stats(k); st.DetectionTime != multiplier*interval || st.RemoteDetectMult != multiplier {
			t.Errorf("SLLBR's session %v: detection %v (remote multiplier %d), want %v", k, st.DetectionTime, st.RemoteDetectMult, multiplier*interval)
		}
	}

	t.Run("a stranger gets no session", func(t *testing.T) {
		before := r.Stats().Discards[bfd.DiscardNoSession]
		time.Sleep(3500 * time.Millisecond) // the stranger sends once a second until Up
		xKeys := []bfd.Key{{Peer: netip.MustParseAddr(pod4), Interface: "x0"}, {Peer: netip.MustParseAddr(pod6), Interface: "x0"}}
		for _, k := range xKeys {
			st, _ := x.Stats(k)
			if st.State == bfd.StateUp || st.PacketsIn != 0 || st.PacketsOut < 2 {
				t.Errorf("stranger's session %v: %s, %d packets in, %d out: want no answer to its packets", k, st.State, st.PacketsIn, st.PacketsOut)
			}
		}
		if n := l.events.count("stranger", bfd.StateUp); n != 0 {
			t.Errorf("%d stranger sessions came up", n)
		}
		if d := r.Stats().Discards[bfd.DiscardNoSession] - before; d < 4 {
			t.Errorf("the pod discarded %d packets for want of a session, want the stranger's (4 or more)", d)
		}
		if s := r.Sessions(); len(s) != 2 || !allState(lb, lbKeys, bfd.StateUp) {
			t.Errorf("the pod's sessions: %+v", s)
		}
	})

	t.Run("liveness removed: sessions removed, the SLLBR hears AdminDown", func(t *testing.T) {
		since := time.Now()
		r.Set(nil)
		wait(t, "the SLLBR's sessions Down by the pod's AdminDown", func() bool { return l.events.peerAdminDown("sllbr", lbKeys, since) })
		wait(t, "no session in the pod", func() bool { return len(r.Sessions()) == 0 })
		if s := r.Stats(); s.Down != 2 || s.Up != 2 || s.SessionFailures != 0 || s.ServerFailures != 0 {
			t.Errorf("stats %+v", s)
		}
	})

	t.Run("liveness back, then the target side stops: AdminDown", func(t *testing.T) {
		r.Set(l.gateways)
		wait(t, "the SLLBR's sessions Up again", func() bool { return allState(lb, lbKeys, bfd.StateUp) })
		since := time.Now()
		stop()
		wait(t, "the SLLBR's sessions Down by the pod's AdminDown", func() bool { return l.events.peerAdminDown("sllbr", lbKeys, since) })
	})
}

func allState(srv *bfd.Server, keys []bfd.Key, st bfd.State) bool {
	for _, k := range keys {
		if s, ok := srv.Stats(k); !ok || s.State != st {
			return false
		}
	}
	return true
}

func wait(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(deadline); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, deadline)
		}
	}
}

// eventLog records the BFD events of the test's servers.
type eventLog struct {
	mu     sync.Mutex
	events []loggedEvent
}

type loggedEvent struct {
	who string
	at  time.Time
	bfd.Event
}

func (l *eventLog) add(who string, e bfd.Event) {
	l.mu.Lock()
	l.events = append(l.events, loggedEvent{who, time.Now(), e})
	l.mu.Unlock()
}

// count returns how many of who's events entered state st.
func (l *eventLog) count(who string, st bfd.State) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.who == who && e.New == st {
			n++
		}
	}
	return n
}

// peerAdminDown reports whether each of keys of who has gone Down because
// the peer signalled AdminDown since since.
func (l *eventLog) peerAdminDown(who string, keys []bfd.Key, since time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		found := false
		for _, e := range l.events {
			found = found || e.who == who && e.Key == k && !e.at.Before(since) && e.New == bfd.StateDown && e.PeerAdminDown
		}
		if !found {
			return false
		}
	}
	return true
}
