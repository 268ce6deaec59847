package targetpod

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/targetnet"
)

var t0 = time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)

// cand is a Candidate of the lab's subnets and next hops with claims
// "route@minutes=vip,vip".
func cand(name string, claims ...string) Candidate {
	g := gw(name)
	c := Candidate{Name: name, Subnets: g.Subnets, NextHops: g.NextHops}
	for _, spec := range claims {
		head, vips, _ := strings.Cut(spec, "=")
		route, minutes, _ := strings.Cut(head, "@")
		var m int
		fmt.Sscan(minutes, &m)
		created := t0.Add(time.Duration(m) * time.Minute)
		if route == "" {
			created = time.Time{}
		}
		for _, v := range strings.Split(vips, ",") {
			c.Claims = append(c.Claims, Claim{VIP: netip.MustParsePrefix(v), Route: route, Created: created})
		}
	}
	return c
}

// admitted summarises Admit's result: "gateway=vips ..." and the
// rejections' strings.
func admitted(t *testing.T, current string, cands ...Candidate) (string, []string) {
	t.Helper()
	gws, rej := Admit(current, cands)
	value, _, err := Next(current, gws)
	if err != nil {
		t.Fatalf("Next of what Admit returned: %v", err)
	}
	if value != "" {
		if _, err := ParseDesired(value); err != nil {
			t.Fatalf("what Admit returned fails the target's check: %v\n%s", err, value)
		}
	}
	var parts []string
	for _, g := range gws {
		parts = append(parts, g.Name+"="+joinPrefixes(g.VIPs))
	}
	var why []string
	for _, r := range rej {
		why = append(why, r.Reason+": "+r.String())
	}
	return strings.Join(parts, " "), why
}

func TestAdmitResolvesAVIPConflictForTheOlderRoute(t *testing.T) {
	got, why := admitted(t, "",
		cand("g2", "b@5=20.0.0.1/32,20.0.0.2/32", "c@1=2001:db8::9/128"),
		cand("g1", "a@3=20.0.0.1/32,2001:db8::1/128"))
	if want := "g1=20.0.0.1/32, 2001:db8::1/128 g2=20.0.0.2/32, 2001:db8::9/128"; got != want {
		t.Errorf("admitted %s, want %s", got, want)
	}
	want := "VIPConflict: VIP 20.0.0.1/32 of L34Route b (Gateway g2) left out: L34Route a (Gateway g1) puts it on the pod too " +
		"and takes precedence (the older route); a pod holds a VIP for one Gateway only"
	if len(why) != 1 || why[0] != want {
		t.Errorf("rejections %q\nwant %q", why, want)
	}
	// A tie in age goes to the lower route name, then Gateway name; the
	// other routes of the loser that have the VIP lose it too.
	got, why = admitted(t, "",
		cand("g1", "z@3=20.0.0.1/32", "y@4=20.0.0.1/32,20.0.0.3/32"),
		cand("g2", "b@3=20.0.0.1/32"),
		cand("g3", "b@3=20.0.0.1/32"))
	if want := "g1=20.0.0.3/32 g2=20.0.0.1/32"; got != want {
		t.Errorf("tie: admitted %s, want %s", got, want)
	}
	if len(why) != 3 || !strings.Contains(why[0], "L34Route y (Gateway g1)") || !strings.Contains(why[1], "L34Route z (Gateway g1)") ||
		!strings.Contains(why[2], "L34Route b (Gateway g3) left out: L34Route b (Gateway g2)") {
		t.Errorf("tie: rejections %q", why)
	}
}

func TestAdmitKeepsAKeptEntrysVIPs(t *testing.T) {
	got, why := admitted(t, "", cand("g2", "@0=20.0.0.1/32"), cand("g1", "a@1=20.0.0.1/32,20.0.0.2/32"))
	if want := "g1=20.0.0.2/32 g2=20.0.0.1/32"; got != want {
		t.Errorf("admitted %s, want %s", got, want)
	}
	if len(why) != 1 || !strings.Contains(why[0], "left out: the pod's current configuration of Gateway g2 puts it on the pod") {
		t.Errorf("rejections %q", why)
	}
}

func TestAdmitLeavesOutWhatTheTargetRefuses(t *testing.T) {
	// A VIP that is none (an object from before the CRD rule would not
	// reach here: translation refuses it too).
	got, why := admitted(t, "", cand("g1", "a@1=127.0.0.1/32,20.0.0.1/32", "b@2=20.0.0.2/32"))
	if got != "g1=20.0.0.1/32, 20.0.0.2/32" || len(why) != 1 ||
		!strings.HasPrefix(why[0], "TargetRefused: VIP 127.0.0.1/32 of L34Route a (Gateway g1) left out: not a VIP: 127.0.0.1/32 is a loopback address") {
		t.Errorf("admitted %s, rejections %q", got, why)
	}
	// An entry the target refuses is left out whole, with each of its
	// routes; the other Gateways stay.
	bad := cand("g2", "c@1=20.0.0.3/32", "d@1=20.0.0.4/32")
	bad.Subnets = []netip.Prefix{netip.MustParsePrefix("169.111.0.0/16")}
	bad.NextHops.IPv4 = nil
	for i := range targetnet.MaxNextHops + 1 {
		bad.NextHops.IPv4 = append(bad.NextHops.IPv4, netip.AddrFrom4([4]byte{169, 111, byte(i / 200), byte(1 + i%200)}))
	}
	got, why = admitted(t, "", cand("g1", "a@1=20.0.0.1/32"), bad)
	if got != "g1=20.0.0.1/32" || len(why) != 2 || !strings.Contains(why[0], "L34Route c (Gateway g2) left out") ||
		!strings.Contains(why[0], "more than 256 ipv4 next hops") || !strings.Contains(why[1], "L34Route d (Gateway g2)") {
		t.Errorf("too many next hops: admitted %s, rejections %q", got, why)
	}
	outside := cand("g2", "c@1=20.0.0.3/32")
	outside.NextHops.IPv6 = append(outside.NextHops.IPv6, netip.MustParseAddr("fd00:999::1"))
	if got, why = admitted(t, "", cand("g1", "a@1=20.0.0.1/32"), outside); got != "g1=20.0.0.1/32" || len(why) != 1 ||
		!strings.Contains(why[0], "next hop fd00:999::1 is in none of the subnets") {
		t.Errorf("next hop outside the subnets: admitted %s, rejections %q", got, why)
	}
}

func TestAdmitKeepsTheVIPLimitOldestRoutesFirst(t *testing.T) {
	vips := func(from, n int) string {
		var s []string
		for i := range n {
			s = append(s, netip.AddrFrom4([4]byte{20, 1, byte((from + i) / 256), byte((from + i) % 256)}).String()+"/32")
		}
		return strings.Join(s, ",")
	}
	max := targetnet.MaxVIPs
	gws, rej := Admit("", []Candidate{cand("g1",
		"old@1="+vips(0, max-10),
		"big@2="+vips(max-10, 20),   // past the limit: left out whole
		"same@3="+vips(0, 5),        // only VIPs held already
		"small@4="+vips(max+10, 10), // fits
		"late@5="+vips(max+20, 1))}) // past the limit
	if len(gws) != 1 || len(gws[0].VIPs) != max {
		t.Fatalf("admitted %d Gateways, VIPs %d", len(gws), len(gws[0].VIPs))
	}
	if len(rej) != 2 || rej[0].Route != "big" || rej[1].Route != "late" || len(rej[0].VIPs) != 20 ||
		!strings.Contains(rej[0].String(), fmt.Sprintf("it would make %d VIPs of Gateway g1 on the pod; a target takes at most %d", max+10, max)) {
		t.Errorf("rejections %v", rej)
	}
}

func TestAdmitKeepsTheCurrentGatewaysWhenTablesRunOut(t *testing.T) {
	tables := targetnet.TableMax - targetnet.TableMin + 1
	var cands []Candidate
	for i := range tables + 2 {
		cands = append(cands, cand(fmt.Sprintf("g%04d", i), fmt.Sprintf("r%d@1=%s/32", i, netip.AddrFrom4([4]byte{20, 2, byte(i / 256), byte(i % 256)}))))
	}
	// The pod holds the last two already: they keep their tables, and the
	// two new ones last in name order are left out.
	current, _, err := Next("", []Gateway{gw("g1000", "20.9.0.1/32"), gw("g1001", "20.9.0.2/32")})
	if err != nil {
		t.Fatal(err)
	}
	gws, rej := Admit(current, cands)
	if len(gws) != tables || gws[len(gws)-1].Name != "g1001" || gws[len(gws)-3].Name != "g0997" {
		t.Errorf("admitted %d, last %s", len(gws), gws[len(gws)-1].Name)
	}
	if len(rej) != 2 || rej[0].Gateway != "g0998" || rej[1].Gateway != "g0999" || rej[0].Reason != RejectedLimit ||
		!strings.Contains(rej[0].String(), "no routing table is left") {
		t.Errorf("rejections %v", rej)
	}
	if _, _, err := Next(current, gws); err != nil {
		t.Errorf("Next: %v", err)
	}
}

// TestAdmitAlwaysGivesWhatTheTargetAccepts throws random candidates at
// Admit: conflicting VIPs, VIPs that are none, bad next hops, many VIPs.
// What it admits always passes the target's ParseDesired after Next, and
// a Gateway is left out only with a rejection saying so.
func TestAdmitAlwaysGivesWhatTheTargetAccepts(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	pool := []string{"20.0.0.1/32", "20.0.0.2/32", "2001:db8::1/128", "127.0.0.1/32", "224.0.0.9/32", "fe80::2/128", "10.1.1.1/32"}
	current := ""
	for round := range 2000 {
		var cands []Candidate
		for g := range 1 + rnd.IntN(4) {
			c := cand(fmt.Sprintf("g%d", g))
			for r := range rnd.IntN(4) {
				route := fmt.Sprintf("r%d", r)
				created := t0.Add(time.Duration(rnd.IntN(3)) * time.Minute)
				if rnd.IntN(10) == 0 {
					route, created = "", time.Time{}
				}
				for range 1 + rnd.IntN(3) {
					c.Claims = append(c.Claims, Claim{VIP: netip.MustParsePrefix(pool[rnd.IntN(len(pool))]), Route: route, Created: created})
				}
			}
			if rnd.IntN(8) == 0 {
				c.NextHops.IPv4 = append(c.NextHops.IPv4, netip.MustParseAddr("192.0.2.1")) // outside the subnets
			}
			if rnd.IntN(8) == 0 {
				c.Subnets = append(c.Subnets, netip.MustParsePrefix("::ffff:10.0.0.0/104"))
			}
			cands = append(cands, c)
		}
		gws, rej := Admit(current, cands)
		value, _, err := Next(current, gws)
		if err != nil {
			t.Fatalf("round %d: Next: %v", round, err)
		}
		if value != "" {
			if _, err := ParseDesired(value); err != nil {
				t.Fatalf("round %d: the target refuses what Admit gave: %v\n%s", round, err, value)
			}
		}
		for _, c := range cands {
			kept := false
			for _, g := range gws {
				kept = kept || g.Name == c.Name
			}
			rejected := false
			for _, r := range rej {
				rejected = rejected || r.Gateway == c.Name
			}
			if !kept && len(c.Claims) > 0 && !rejected {
				t.Fatalf("round %d: %s left out without a rejection", round, c.Name)
			}
		}
		current = value
	}
}
