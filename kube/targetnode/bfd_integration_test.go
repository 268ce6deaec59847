package targetnode_test

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// desiredLive is desired with liveness (interval ms, multiplier) on the
// Gateway, or without when ms is 0.
func desiredLive(t *testing.T, gen, ms int64, mult int, hops ...string) string {
	t.Helper()
	d, err := targetpod.ParseDesired(desired(gen, hops...))
	if err != nil {
		t.Fatal(err)
	}
	if ms > 0 {
		d.Gateways[0].Liveness = &targetpod.GatewayLiveness{IntervalMilliseconds: ms, Multiplier: mult}
	}
	return d.Marshal()
}

// testNodeBFD: a pod whose configuration asks for liveness answers BFD
// from its own namespace: the daemon runs its sessions there, with the
// SLLBR (a bfd.Server in the pod's peer namespace, holding two of the
// three next hops) on both families; it stops them (AdminDown) when
// liveness goes and when the pod is deleted, and then nothing of it keeps
// the pod's namespace alive.
func testNodeBFD(t *testing.T, e *env, x *daemon) {
	const ms, mult = 100, 5
	hops := []string{"169.111.100.1", "169.111.100.2", "fd00:111::1"}
	d1 := desiredLive(t, 1, ms, mult, hops...)
	_, ns := e.newPod("app-bfd", "node-a", false, map[string]string{kube.AnnotationTargetNetwork: d1})
	lb := ns + "-lb"
	netns.Run(t, "ip", "-n", lb, "addr", "add", "169.111.100.1/24", "dev", "peer")
	netns.Run(t, "ip", "-n", lb, "addr", "add", "fd00:111::1/64", "dev", "peer", "nodad")
	var mu sync.Mutex
	var events []bfd.Event
	srv := bfd.NewServer(bfd.WithEventHandler(func(ev bfd.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}))
	var keys []bfd.Key
	for _, p := range [][2]string{{"169.111.100.11", "169.111.100.1"}, {"fd00:111::11", "fd00:111::1"}} {
		cfg := bfd.SessionConfig{Peer: netip.MustParseAddr(p[0]), Local: netip.MustParseAddr(p[1]), Interface: "peer",
			DesiredMinTx: ms * time.Millisecond, RequiredMinRx: ms * time.Millisecond, DetectMultiplier: mult}
		if err := srv.Add(cfg); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, cfg.Key())
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- netns.Do(lb, func() error { return srv.Run(ctx) }) }()
	t.Cleanup(func() { cancel(); <-done })

	up := func() bool {
		for _, k := range keys {
			if s, ok := srv.Stats(k); !ok || s.State != bfd.StateUp {
				return false
			}
		}
		return true
	}
	adminDownSince := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			down := map[bfd.Key]bool{}
			for _, ev := range events[n:] {
				if ev.New == bfd.StateDown && ev.PeerAdminDown {
					down[ev.Key] = true
				}
			}
			return len(down) == len(keys)
		}
	}
	nEvents := func() int { mu.Lock(); defer mu.Unlock(); return len(events) }
	until(t, "the SLLBR's sessions with the pod Up", up)
	for _, k := range keys {
		if s, _ := srv.Stats(k); s.DetectionTime != mult*ms*time.Millisecond {
			t.Errorf("the SLLBR's session %v: detection %v, want %v", k, s.DetectionTime, mult*ms*time.Millisecond)
		}
	}
	// Its sessions: two Up, one Down (169.111.100.2 has no SLLBR), which
	// leaves the IPv4 route once its start grace has passed (never Up), and
	// keeps its session; the pod stays ready.
	until(t, "the daemon's BFD sessions: 2 up, 1 down", func() bool {
		s := x.d.BFDStats()
		return s.Sessions[bfd.StateUp] == 2 && s.Sessions[bfd.StateDown] == 1 && s.ServerFailures == 0 && s.SessionFailures == 0
	})
	st := e.status("app-bfd", "169.111.100.2 left out as down", func(s targetpod.Status, _ bool) bool {
		return len(s.Gateways) == 1 && s.Gateways[0].DownNextHops != nil
	})
	if g := st.Gateways[0]; !st.Ready || len(g.NextHops.IPv4) != 1 || g.NextHops.IPv4[0].String() != "169.111.100.1" ||
		len(g.DownNextHops.IPv4) != 1 || g.DownNextHops.IPv4[0].String() != "169.111.100.2" || len(g.DownNextHops.IPv6) != 0 {
		t.Errorf("status %+v: want ready, 169.111.100.1 routed and 169.111.100.2 down", st)
	}
	if r := ip(ns, "-4", "route", "show", "table", "50000"); strings.Contains(r, "169.111.100.2") || !strings.Contains(r, "169.111.100.1") {
		t.Errorf("the pod's IPv4 routes: %s, want via 169.111.100.1 only", r)
	}
	if s := x.d.BFDStats(); s.LeftOut != 1 || s.Sessions[bfd.StateDown] != 1 {
		t.Errorf("stats %+v: want 1 next hop left out, its session kept", s)
	}

	n := nEvents()
	d2 := desiredLive(t, 2, 0, 0, hops...)
	e.annotate("app-bfd", kube.AnnotationTargetNetwork, &d2)
	until(t, "liveness removed: the SLLBR hears AdminDown", adminDownSince(n))
	until(t, "liveness removed: no session on the node", func() bool { return x.d.BFDStats().Sessions[bfd.StateDown] == 0 })

	d3 := desiredLive(t, 3, ms, mult, hops...)
	e.annotate("app-bfd", kube.AnnotationTargetNetwork, &d3)
	until(t, "liveness back: the SLLBR's sessions Up", up)

	n = nEvents()
	zero := int64(0)
	if err := e.admin.CoreV1().Pods(testNS).Delete(e.ctx, "app-bfd", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	until(t, "the pod deleted: the SLLBR hears AdminDown", adminDownSince(n))
	until(t, "the pod deleted: no session on the node", func() bool { return x.d.BFDStats().Sessions[bfd.StateUp] == 0 })
	// The sandbox goes: nothing of the daemon's (a thread, a socket, a
	// file) keeps its namespace, whose veth then goes with it.
	netns.Run(t, "ip", "netns", "del", ns)
	until(t, "the pod's namespace gone", func() bool { return !strings.Contains(ip(lb, "link", "show"), "peer") })
	if s := x.d.BFDStats(); s.Up < 4 || s.Down < 4 {
		t.Errorf("transitions counted: %d up, %d down; want 4 each at least", s.Up, s.Down)
	}
}

// until waits for ok (deadline).
func until(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(deadline); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, deadline)
		}
	}
}
