package main

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// birdRoute returns `birdc show route all` for the VIP's host route ("" when
// BIRD has none: birdc then fails with "Network not found").
func birdRoute(t *testing.T, b *lab.BIRD, vip netip.Addr) string {
	out, err := b.Birdc(t.Context(), "show", "route", "all", netip.PrefixFrom(vip, vip.BitLen()).String())
	if err != nil {
		return ""
	}
	return out
}

// sessionSince returns the state, since and info columns of BIRD's protocol
// line for the LB address a ("up 18:49:54.926 Established"): the time
// changes whenever the session restarts.
func sessionSince(t *testing.T, b *lab.BIRD, a netip.Addr) string {
	for line := range strings.SplitSeq(birdc(t, b, "show", "protocols", lab.BIRDProtocolName(a)), "\n") {
		if f := strings.Fields(line); len(f) >= 6 && f[0] == lab.BIRDProtocolName(a) {
			return strings.Join(f[3:6], " ")
		}
	}
	t.Fatalf("BIRD has no protocol for %v", a)
	return ""
}

// upSince waits until BIRD's session with the LB address a is up and has
// stayed so for sessionSettle, and returns sessionSince then. The routes
// can arrive while BIRD is still entering the up state, whose time then
// changes once more (seen: 2 ms later), which is no restart.
func upSince(t *testing.T, b *lab.BIRD, a netip.Addr) string {
	t.Helper()
	var since string
	var seen time.Time
	waitFor(t, 20*time.Second, fmt.Sprintf("BIRD's session with %v up for %v", a, sessionSettle), func() bool {
		now := sessionSince(t, b, a)
		if now != since || !strings.HasPrefix(now, "up ") || !strings.HasSuffix(now, " Established") {
			since, seen = now, time.Now()
			return false
		}
		return time.Since(seen) >= sessionSettle
	})
	return since
}

// sameSession reports whether two sessionSince readings are of one session:
// the same state, the times at most sessionJitter apart. BIRD prints the
// time of the last state change converted from its monotonic clock with
// the current offset to the wall clock, so an unchanged session's time
// moves by a millisecond now and then; a
// restart takes the session down and up again, at least BIRD's error wait
// time later.
func sameSession(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != 3 || len(fb) != 3 || fa[0] != fb[0] || fa[2] != fb[2] {
		return a == b
	}
	ta, errA := time.Parse("15:04:05.000", fa[1])
	tb, errB := time.Parse("15:04:05.000", fb[1])
	if errA != nil || errB != nil {
		return a == b
	}
	return (ta.Sub(tb)).Abs() <= sessionJitter
}

// sessionJitter bounds how far BIRD's printed time of an unchanged session
// moves.
const sessionJitter = 50 * time.Millisecond

// sessionSettle is how long a BIRD session must stay up unchanged before
// the tests take its time as the one a restart would change.
const sessionSettle = 200 * time.Millisecond

// TestIntegrationBIRDCommunities: the communities and large communities of
// an eBGP GatewayRouter arrive at BIRD with both VIPs; editing them
// re-advertises the VIPs with the new set without resetting the session.
func TestIntegrationBIRDCommunities(t *testing.T) {
	require.Lab(t)
	l := labSetup(t, 1)
	lb := []netip.Addr{lab.LBGatewaySide(1).V4.Addr(), lab.LBGatewaySide(1).V6.Addr()}
	gw := []netip.Addr{lab.GatewayAddrs().V4.Addr(), lab.GatewayAddrs().V6.Addr()}
	b := startBIRD(t, l, l.DefaultBIRDConfig())
	spec := func(communities, large string) string {
		return fmt.Sprintf(`bgp: {localASN: 8103, remoteASN: 4248829953, holdTime: 24s, remotePort: 10179, communities: [%s], largeCommunities: [%s]}`, communities, large)
	}
	conf := e2e.Config{Routers: bgpRouters(gw, spec(`"8103:100", "65535:65281"`, `"8103:1:2"`)), Services: allTargets, Routes: webRoute}
	dir, insts := startInstances(t, l, conf, 1)
	vips := []netip.Addr{vip4, vip6}
	has := func(i int, want ...string) func() bool {
		return func() bool {
			out := birdRoute(t, b, vips[i])
			for _, w := range want {
				if !strings.Contains(out, w) {
					return false
				}
			}
			return true
		}
	}
	since := make([]string, 2)
	for i := range 2 {
		waitFor(t, 20*time.Second, fmt.Sprintf("%v at BIRD with the communities", vips[i]),
			has(i, "BGP.community: (8103,100) (65535,65281)", "BGP.large_community: (8103, 1, 2)"))
		since[i] = upSince(t, b, lb[i])
	}
	t.Logf("BIRD's route:\n%s", birdRoute(t, b, vip4))

	conf.Routers = bgpRouters(gw, spec(`"8103:200"`, ""))
	edited := time.Now()
	if err := e2e.Write(dir, conf); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		d := waitSince(t, edited, 10*time.Second, fmt.Sprintf("%v at BIRD with the edited communities", vips[i]), func() bool {
			out := birdRoute(t, b, vips[i])
			return strings.Contains(out, "BGP.community: (8103,200)\n") && !strings.Contains(out, "large_community")
		})
		t.Logf("communities edited: %v re-advertised after %v", vips[i], d.Round(time.Millisecond))
		if now := sessionSince(t, b, lb[i]); !sameSession(now, since[i]) {
			t.Errorf("the session with %v restarted (since %q, now %q): attributes must change without a reset", lb[i], since[i], now)
		}
		flaps := fmt.Sprintf(`sllbrd_bgp_session_flaps_total{peer=%q`, gw[i])
		if v, ok, err := insts[0].Metric(flaps); err != nil || !ok || v != 0 {
			t.Errorf("%s} = %v (found %v, err %v), want 0", flaps, v, ok, err)
		}
	}
}

// TestIntegrationBIRDLocalPreference: two LB instances announce the same
// VIPs over iBGP, the first with local preference 200 and the second with
// 100; the gateway installs only the first. Lowering the first's to 50
// moves the VIPs to the second without resetting the sessions.
func TestIntegrationBIRDLocalPreference(t *testing.T) {
	require.Lab(t)
	l := labSetup(t, 2)
	cfg := l.DefaultBIRDConfig()
	cfg.LocalAS, cfg.PeerAS = 8103, 8103
	b := startBIRD(t, l, cfg)
	gw := []netip.Addr{lab.GatewayAddrs().V4.Addr(), lab.GatewayAddrs().V6.Addr()}
	spec := func(lp int) string {
		return fmt.Sprintf(`bgp: {localASN: 8103, remoteASN: 8103, holdTime: 24s, remotePort: 10179, localPreference: %d}`, lp)
	}
	first := e2e.Config{Routers: bgpRouters(gw, spec(200)), Services: allTargets, Routes: webRoute}
	second := e2e.Config{Routers: bgpRouters(gw, spec(100)), Services: allTargets, Routes: webRoute}
	dir, _ := startInstances(t, l, first, 1)
	startInstances(t, l, second, 2)
	vips := []netip.Addr{vip4, vip6}
	// only reports whether the gateway's kernel routes vip via LB i alone.
	only := func(vip netip.Addr, i int) func() bool {
		other := 3 - i
		return func() bool {
			return gwRoutes(t, l, vip, lab.LBGatewaySide(i).For(vip)) && !gwRoutes(t, l, vip, lab.LBGatewaySide(other).For(vip))
		}
	}
	for _, vip := range vips {
		waitFor(t, 20*time.Second, fmt.Sprintf("BIRD knows %v from both LBs", vip), func() bool {
			out := birdRoute(t, b, vip)
			return strings.Contains(out, "BGP.local_pref: 200") && strings.Contains(out, "BGP.local_pref: 100")
		})
		waitFor(t, 10*time.Second, fmt.Sprintf("%v routed via lb1 only", vip), only(vip, 1))
	}
	t.Logf("BIRD's routes:\n%s", birdRoute(t, b, vip4))
	since := upSince(t, b, lab.LBGatewaySide(1).V4.Addr())

	first.Routers = bgpRouters(gw, spec(50))
	edited := time.Now()
	if err := e2e.Write(dir, first); err != nil {
		t.Fatal(err)
	}
	for _, vip := range vips {
		d := waitSince(t, edited, 10*time.Second, fmt.Sprintf("%v routed via lb2 only", vip), only(vip, 2))
		t.Logf("lb1's local preference lowered to 50: %v moved to lb2 after %v", vip, d.Round(time.Millisecond))
	}
	if now := sessionSince(t, b, lab.LBGatewaySide(1).V4.Addr()); !sameSession(now, since) {
		t.Errorf("lb1's session restarted (since %q, now %q)", since, now)
	}
}

// TestSameSession: a millisecond of BIRD's clock conversion is no restart,
// a later time or another state is.
func TestSameSession(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"up 10:13:21.943 Established", "up 10:13:21.942 Established", true},
		{"up 10:13:21.943 Established", "up 10:13:21.943 Established", true},
		{"up 10:13:21.943 Established", "up 10:13:23.101 Established", false},
		{"up 10:13:21.943 Established", "start 10:13:21.943 Connect", false},
	} {
		if got := sameSession(c.a, c.b); got != c.same {
			t.Errorf("sameSession(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
