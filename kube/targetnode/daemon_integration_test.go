package targetnode_test

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/rtlookup"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetnode"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// TestIntegrationNodeDaemon runs the node daemon of node-a against
// kube-apiserver, as a user that may only list, watch and patch pods, and
// the real kernel, with network namespaces the test makes standing in for
// the pods' sandboxes (the resolver maps pod UIDs to them: the runtime's
// side is internal/cri's test and the on-node test's). Both families.
func TestIntegrationNodeDaemon(t *testing.T) {
	e := newEnv(t)
	d1 := desired(1, "169.111.100.1", "169.111.100.2", "fd00:111::1")
	app, appNS := e.newPod("app", "node-a", false, map[string]string{kube.AnnotationTargetNetwork: d1})
	_, app2NS := e.newPod("app-2", "node-a", false, map[string]string{kube.AnnotationTargetNetwork: d1,
		kube.AnnotationTargetAgent: kube.TargetAgentNode})
	side, sideNS := e.newPod("side", "node-a", false, map[string]string{kube.AnnotationTargetNetwork: d1,
		kube.AnnotationTargetAgent: kube.TargetAgentSidecar})
	other, otherNS := e.newPod("other", "node-b", false, map[string]string{kube.AnnotationTargetNetwork: d1})
	host, _ := e.newPod("host", "node-a", true, map[string]string{kube.AnnotationTargetNetwork: d1})

	x := e.start(false)
	for _, pod := range []string{"app", "app-2"} {
		s := e.status(pod, "generation 1 applied", func(s targetpod.Status, _ bool) bool { return s.ObservedGeneration == 1 })
		if !s.Ready || s.Agent != "node/node-a" || len(s.Gateways) != 1 || len(s.Gateways[0].VIPs) != 2 ||
			len(s.Gateways[0].NextHops.IPv4) != 2 || len(s.Gateways[0].NextHops.IPv6) != 1 || s.Gateways[0].Interfaces["ipv6"] != "net1" {
			t.Errorf("%s: status %+v", pod, s)
		}
	}
	for _, want := range []string{"20.0.0.1/32", "2001:db8::1/128", "10200:\tfrom 20.0.0.1 lookup 50000", "10200:\tfrom 2001:db8::1 lookup 50000",
		"nexthop via 169.111.100.1 dev net1", "default via fd00:111::1 dev net1"} {
		if k := kernel(appNS); !strings.Contains(k, want) {
			t.Errorf("app's namespace lacks %q:\n%s", want, k)
		}
	}
	s := e.status("host", "the hostNetwork pod refused", func(s targetpod.Status, present bool) bool { return present })
	if s.Ready || s.Agent != "node/node-a" || len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "hostNetwork") {
		t.Errorf("hostNetwork pod: status %+v", s)
	}
	if ok, why := x.d.Ready(); !ok || !x.d.RuntimeUp() {
		t.Errorf("daemon not ready (%v), or the runtime not up: %v", x.d.RuntimeUp(), why)
	}
	// The pods it follows: app and app-2 applied, host refused.
	wantStates(t, x.d, 2, 0, 0, 1)
	// The pod marked for the sidecar and the pod of node-b: untouched.
	for _, p := range []struct{ name, ns string }{{"side", sideNS}, {"other", otherNS}} {
		if v, present := e.statusOf(p.name); present {
			t.Errorf("%s: status written: %s", p.name, v)
		}
		if left := nothingOurs(p.ns); left != "" {
			t.Errorf("%s: configured: %s", p.name, left)
		}
	}
	for _, uid := range []types.UID{side.UID, other.UID, host.UID} {
		if n := e.resolver.asks(uid); n != 0 {
			t.Errorf("the runtime was asked %d times for pod %s", n, uid)
		}
	}

	// A status write of a pod that was replaced by another of its name
	// (a StatefulSet's) fails: the UID is the precondition.
	if err := targetpod.PatchStatus(e.ctx, e.admin, testNS, "app-2", "0d15ea5e-0000-4000-8000-000000000000", "stale"); err == nil || !strings.Contains(err.Error(), "uid") {
		t.Errorf("a status write with another pod's UID: %v, want refused for its uid", err)
	}
	if v, _ := e.statusOf("app-2"); v == "stale" {
		t.Error("a status write with another pod's UID was applied")
	}

	t.Run("BFD: a pod's namespace answers its SLLBRs", func(t *testing.T) { testNodeBFD(t, e, x) })

	t.Run("desired change: next hops replaced, no window, no ready: false", func(t *testing.T) {
		sets := [][]string{{"169.111.100.2", "169.111.100.3", "fd00:111::2"}, {"169.111.100.1", "fd00:111::1", "fd00:111::2"},
			{"169.111.100.3", "fd00:111::3"}, {"169.111.100.1", "169.111.100.2", "fd00:111::1"}}
		var gateways []netip.Addr
		for _, set := range sets {
			for _, h := range set {
				gateways = append(gateways, netip.MustParseAddr(h))
			}
		}
		var drops rtlookup.Drops
		watch := rtlookup.Watch(appNS, []rtlookup.Query{
			{Src: netip.MustParseAddr("20.0.0.1"), Dst: netip.MustParseAddr("10.100.0.2")},
			{Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("fd00:100::2")},
		}, func(q rtlookup.Query, a rtlookup.Answer, err error) string {
			if drops.Record(q, err) {
				return ""
			}
			return rtlookup.Via(a, err, 50000, gateways...)
		})
		changes := monitor(t, appNS)
		statuses := e.watchStatuses("app")
		for i, set := range sets {
			gen := int64(2 + i)
			v := desired(gen, set...)
			e.annotate("app", kube.AnnotationTargetNetwork, &v)
			s := e.status("app", "the new generation applied", func(s targetpod.Status, _ bool) bool { return s.ObservedGeneration == gen })
			var got []string
			for _, h := range append(s.Gateways[0].NextHops.IPv4, s.Gateways[0].NextHops.IPv6...) {
				got = append(got, h.String())
			}
			if !s.Ready || !slices.Equal(got, set) {
				t.Errorf("generation %d: status %+v, want next hops %v", gen, s, set)
			}
		}
		res := watch()
		seen := statuses()
		t.Logf("%d route lookups during %d changes: %d wrong, dropped IPv4 %d, IPv6 %d; %d status values seen",
			res.Lookups, len(sets), res.Bad, len(drops.IPv4()), len(drops.IPv6()), len(seen))
		if res.Err != nil || res.Bad != 0 {
			t.Errorf("%d of %d lookups routed wrongly (first: %s; error %v)", res.Bad, res.Lookups, res.FirstBad, res.Err)
		}
		if max6 := rtlookup.IPv6RaceAllowance(res.Lookups / 2); len(drops.IPv4()) != 0 || len(drops.IPv6()) > max6 {
			t.Errorf("lookups dropped: IPv4 %q, IPv6 %q (at most %d)", drops.IPv4(), drops.IPv6(), max6)
		}
		if out := changes(); strings.Contains(out, "Deleted") {
			t.Errorf("a next-hop change deleted something:\n%s", out)
		}
		for _, v := range seen {
			if st, err := targetpod.ParseStatus(v); err != nil || !st.Ready {
				t.Errorf("status written across the changes: %q", v)
			}
		}
	})

	t.Run("restart: a new daemon changes nothing and writes nothing", func(t *testing.T) {
		x.stop()
		before := map[string]string{appNS: kernel(appNS), app2NS: kernel(app2NS)}
		stops := []func() string{monitor(t, appNS), monitor(t, app2NS)}
		x = e.start(false)
		// Two applies of each pod: the first and one resync (1 s).
		for end := time.Now().Add(deadline); x.metrics.ok.Load() < 4 && time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond)
		}
		if n := x.metrics.ok.Load(); n < 4 {
			t.Fatalf("%d applies by the new daemon", n)
		}
		for ns, k := range before {
			if after := kernel(ns); after != k {
				t.Errorf("the kernel changed across a restart:\n%s\n%s", k, after)
			}
		}
		for _, stop := range stops {
			if out := stop(); out != "" {
				t.Errorf("the new daemon changed the kernel:\n%s", out)
			}
		}
		if n := x.patches.n.Load(); n != 0 {
			t.Errorf("the new daemon wrote %d statuses", n)
		}
	})

	t.Run("netns gone: skipped quietly, configured again when it is back", func(t *testing.T) {
		patches := x.patches.n.Load()
		netns.Run(t, "ip", "netns", "del", appNS)
		// Nothing keeps the namespace: its veth goes with it. (An apply
		// holds it for milliseconds; a file or socket left open would hold
		// it until the garbage collector closes it, if ever.)
		lb := appNS + "-lb"
		for end := time.Now().Add(10 * time.Second); strings.Contains(ip(lb, "link", "show"), "peer"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("the deleted namespace lives on: something holds it")
			}
		}
		asked, skipped := e.resolver.asks(app.UID), x.d.NamespaceUnavailable()
		time.Sleep(3 * time.Second)
		if n := e.resolver.asks(app.UID) - asked; n > 8 {
			t.Errorf("the runtime was asked %d times in 3 s for a pod without a sandbox", n)
		}
		if x.d.NamespaceUnavailable() == skipped {
			t.Error("no apply without a sandbox counted")
		}
		wantStates(t, x.d, 1, 0, 1, 1)
		if w := x.log.about(string(app.UID)); len(w) != 0 {
			t.Errorf("warnings about the pod without a sandbox:\n%s", strings.Join(w, ""))
		}
		if ok, why := x.d.Ready(); !ok {
			t.Errorf("daemon not ready: %v", why)
		}
		// The sandbox re-created: a new, empty namespace under the same name.
		e.podNetNS(appNS, lb, "peer")
		for end := time.Now().Add(deadline); !strings.Contains(kernel(appNS), "nexthop via 169.111.100.1 dev net1"); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("the re-created namespace is not configured:\n%s", kernel(appNS))
			}
		}
		if n := x.patches.n.Load() - patches; n != 0 {
			t.Errorf("%d statuses written (the configuration is the same)", n)
		}
		wantStates(t, x.d, 2, 0, 0, 1)
	})

	t.Run("pod deleted: nothing to do", func(t *testing.T) {
		before := kernel(appNS)
		zero := int64(0)
		if err := e.admin.CoreV1().Pods(testNS).Delete(e.ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		asked := e.resolver.asks(app.UID)
		time.Sleep(3 * time.Second) // 3 resync periods
		if n := e.resolver.asks(app.UID) - asked; n != 0 {
			t.Errorf("the runtime was asked %d times for a deleted pod", n)
		}
		if after := kernel(appNS); after != before {
			t.Errorf("the deleted pod's namespace changed:\n%s\n%s", before, after)
		}
		if w := x.log.about(string(app.UID)); len(w) != 0 {
			t.Errorf("warnings about the deleted pod:\n%s", strings.Join(w, ""))
		}
		wantStates(t, x.d, 1, 0, 0, 1) // the deleted pod in none
	})

	t.Run("cleanup removes everything of ours, and only ours", func(t *testing.T) {
		x.stop()
		// The sidecar's pod holds what its sidecar applied, and its status.
		sidecarApplied(t, sideNS, d1)
		sideStatus := targetpod.Status{Version: 1, ObservedGeneration: 1, Ready: true, Agent: targetpod.SidecarAgent}.Marshal()
		e.annotate("side", kube.AnnotationTargetNetworkStatus, &sideStatus)
		sideBefore := kernel(sideNS)
		c := e.start(true)
		for end := time.Now().Add(deadline); ; time.Sleep(50 * time.Millisecond) {
			if ok, _ := c.d.Ready(); ok {
				break
			}
			if time.Now().After(end) {
				_, why := c.d.Ready()
				t.Fatalf("clean-up not done: %v", why)
			}
		}
		if left := nothingOurs(app2NS); left != "" {
			t.Errorf("left in app-2's namespace: %s", left)
		}
		for _, pod := range []string{"app-2", "host"} {
			if v, present := e.statusOf(pod); present {
				t.Errorf("%s: status left: %s", pod, v)
			}
		}
		if after := kernel(sideNS); after != sideBefore {
			t.Errorf("the sidecar's pod changed:\n%s\n%s", sideBefore, after)
		}
		if v, _ := e.statusOf("side"); v != sideStatus {
			t.Errorf("the sidecar's status: %q", v)
		}
		if n := e.resolver.asks(side.UID); n != 0 {
			t.Errorf("the runtime was asked %d times for the sidecar's pod", n)
		}
	})
}

// sidecarApplied applies d in namespace ns as a sidecar would.
func sidecarApplied(t *testing.T, ns, d string) {
	t.Helper()
	want, err := targetpod.ParseDesired(d)
	if err != nil {
		t.Fatal(err)
	}
	netns.DoOrFail(t, ns, func() error {
		k, err := targetnet.NewNetlinkKernel(0)
		if err != nil {
			return err
		}
		defer k.Close()
		_, err = targetnet.New(k).Apply(want.Net())
		return err
	})
}

// wantStates waits until the daemon's pods are in these states.
func wantStates(t *testing.T, d *targetnode.Daemon, applied, notReady, noSandbox, refused int) {
	t.Helper()
	want := map[string]int{targetnode.PodApplied: applied, targetnode.PodNotReady: notReady, targetnode.PodNoSandbox: noSandbox,
		targetnode.PodRefused: refused}
	var got map[string]int
	for end := time.Now().Add(deadline); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got = d.PodStates(); maps.Equal(got, want) {
			return
		}
	}
	t.Errorf("pod states %v, want %v", got, want)
}
