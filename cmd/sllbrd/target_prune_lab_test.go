package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// pruneDropTable is the nftables table with which t2 drops lb1's frames.
const pruneDropTable = "sllbrd-prune-drop"

// TestIntegrationClusterPartialFault: the faults of docs/liveness.md where
// one SLLBR cannot reach targets that the other reaches, in the whole
// system (the cluster lab: the controller, two SLLBRs behind BIRD's ECMP,
// three targets each with its real `sllbrd target` sidecar), both
// families:
//   - t2 drops every frame from lb1 ("Two or more SLLBRs"): lb1 finds t2
//     dead and sends its flows elsewhere, lb2 keeps sending t2 its flows,
//     and t2 cannot reach lb1 any more;
//   - lb1's link to the targets goes down ("The VIPs announced"): lb1 finds
//     every target dead and withdraws the VIPs, every flow goes through lb2.
//
// With probe=icmp the targets' return routes keep lb1, so the replies they
// hash to lb1 are lost (the control: some must be); with probe=bfd they
// leave lb1 out of their return routes and every flow is answered. The
// fractions are reported.
func TestIntegrationClusterPartialFault(t *testing.T) {
	require.Lab(t)
	c := newTwoLBCluster(t)
	lb1MAC := linkMAC(t, c.lab, lab.LBName(1), lab.TargetLink)
	port := lab.LBName(1) + "-" + lab.TargetLink
	faults := []struct {
		name    string
		targets []int // the targets that lose lb1
		fail    func()
		mend    func()
	}{
		{"t2 unreachable from lb1 only", []int{2},
			func() { c.dropFrom(2, lb1MAC) },
			func() { exec1(t, c.lab, lab.TargetName(2), "nft", "delete", "table", "netdev", pruneDropTable) }},
		{"lb1's link to the targets down", []int{1, 2, 3},
			func() { exec1(t, c.lab, lab.SwitchNode, "ip", "link", "set", port, "down") },
			func() { exec1(t, c.lab, lab.SwitchNode, "ip", "link", "set", port, "up") }},
	}
	t.Cleanup(func() { _, _ = c.lab.Exec(context.Background(), lab.SwitchNode, "ip", "link", "set", port, "up") })
	for _, probe := range []string{"icmp", "bfd"} {
		c.setLiveness("interval=100ms,multiplier=3,hold-down=0s,probe=" + probe)
		for _, f := range faults {
			what := fmt.Sprintf("probe=%s, %s", probe, f.name)
			c.waitProbed(probe)
			base := map[netip.Addr]map[lab.Flow]string{}
			for _, vip := range []netip.Addr{vip4, vip6} {
				base[vip] = flows(t, c.lab, lab.FlowOptions{VIP: vip, Port: flowPort, Proto: "tcp", Count: 120, SrcPortBase: 23000})
			}
			faultAt := time.Now()
			f.fail()
			waitFor(t, 30*time.Second, what+": lb1 finds the targets dead", func() bool { return c.deadFor(1) == 2*len(f.targets) })
			if len(f.targets) == 3 {
				c.waitGatewayVia(2) // lb1 has no live endpoint: withdrawn
			}
			if probe == "bfd" {
				d := waitSince(t, faultAt, 30*time.Second, what+": the targets leave lb1 out of their return routes", func() bool {
					return c.allTargets(f.targets, func(s targetpod.Status) bool { return hopsOf(s) == wantHops(2) })
				})
				for _, i := range f.targets {
					if s := c.status(i); !s.Ready || len(s.Gateways) != 1 || s.Gateways[0].DownNextHops == nil {
						t.Errorf("%s: t%d's status %+v: want ready, lb1's next hops down", what, i, s)
					}
				}
				t.Logf("%s: the targets' statuses say their return routes go through lb2 only %v after the fault (BFD 100ms x 3)", what, d.Round(time.Millisecond))
			}
			time.Sleep(time.Second)
			c.waitTables(3-len(f.targets), 1) // lb1's apply, not only its metric
			if n := c.deadFor(2); n != 0 {
				t.Fatalf("%s: lb2 finds %d addresses dead, want none", what, n)
			}
			// The targets' neighbour entries expire (they cannot learn lb1's
			// again): flushed here, as after about a minute.
			for _, i := range f.targets {
				exec1(t, c.lab, lab.TargetName(i), "ip", "neigh", "flush", "dev", lab.TargetLink)
			}
			for _, vip := range []netip.Addr{vip4, vip6} {
				c.reportLoss(what, probe, vip, base[vip], f.targets)
			}
			mendAt := time.Now()
			f.mend()
			waitFor(t, 30*time.Second, what+": lb1 finds the targets alive again", func() bool { return c.deadFor(1) == 0 })
			c.waitGatewayVia(1, 2)
			if probe == "bfd" {
				d := waitSince(t, mendAt, 30*time.Second, what+": the targets route through lb1 again", func() bool {
					return c.allTargets([]int{1, 2, 3}, func(s targetpod.Status) bool { return hopsOf(s) == wantHops(1, 2) })
				})
				t.Logf("%s: the targets' statuses say their return routes go through both again %v after the fault was mended", what, d.Round(time.Millisecond))
			}
		}
	}
}

// reportLoss runs base's flows of vip again through the gateway and
// reports the flows of the targets that lost lb1 left unanswered; the
// other targets' must all be answered, and with probe=icmp some flow
// of those targets must be lost (the targets still route replies through
// lb1: the control), with probe=bfd none.
func (c *cluster) reportLoss(what, probe string, vip netip.Addr, base map[lab.Flow]string, targets []int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	got, _ := c.lab.Flows(ctx, lab.FlowOptions{VIP: vip, Port: flowPort, Proto: "tcp", Count: len(base), SrcPortBase: 23000,
		Timeout: 500 * time.Millisecond})
	var of, lost, lostOthers int
	for f, was := range base {
		_, answered := got[f]
		switch {
		case slices.ContainsFunc(targets, func(i int) bool { return lab.TargetName(i) == was }):
			of++
			if !answered {
				lost++
			}
		case !answered:
			lostOthers++
		}
	}
	c.t.Logf("%s, %v: %d of the %d flows of the targets that lost lb1 unanswered (%.0f %%), %d of all %d (%.0f %%)",
		what, vip, lost, of, pct(lost, of), lost+lostOthers, len(base), pct(lost+lostOthers, len(base)))
	switch {
	case lostOthers != 0:
		c.t.Errorf("%s, %v: %d flows of the other targets unanswered", what, vip, lostOthers)
	case probe == "icmp" && lost == 0:
		c.t.Errorf("%s, %v: no flow lost: the lab does not reproduce the fault", what, vip)
	case probe == "bfd" && lost != 0:
		c.t.Errorf("%s, %v: %d flows unanswered, want none (the targets route their replies through lb2 only)", what, vip, lost)
	}
}

// waitGatewayVia waits until the gateway routes both VIPs through the LBs
// lbs (ECMP), and only those.
func (c *cluster) waitGatewayVia(lbs ...int) {
	c.t.Helper()
	want := fmt.Sprint(lbs, lbs)
	waitFor(c.t, time.Minute, "the gateway routes the VIPs via "+want, func() bool { return fmt.Sprint(c.gatewayVia(vip4), c.gatewayVia(vip6)) == want })
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// waitProbed waits until both SLLBRs probe the targets' 6 addresses and
// find them alive, and, with probe=bfd, every target's sidecar has its 4
// sessions (2 SLLBRs, 2 families) Up, and both hash over the 3 targets.
func (c *cluster) waitProbed(probe string) {
	c.t.Helper()
	defer c.waitTables(3, 1, 2)
	waitFor(c.t, time.Minute, "probe="+probe+": both SLLBRs find all 6 addresses alive", func() bool {
		for _, i := range []int{1, 2} {
			if v, _, err := c.lbs[i].Metric(`sllbrd_liveness_probed_addresses{state="alive"}`); err != nil || v != 6 || c.deadFor(i) != 0 {
				return false
			}
		}
		return true
	})
	if probe != "bfd" {
		return
	}
	waitFor(c.t, time.Minute, "every sidecar's 4 BFD sessions Up", func() bool {
		for _, i := range []int{1, 2, 3} {
			if c.sidecarMetric(i, `sllbrd_target_bfd_sessions{state="up"}`) != 4 {
				return false
			}
		}
		return true
	})
}

// deadFor returns how many endpoint addresses LB i finds dead.
func (c *cluster) deadFor(i int) int {
	v, _, err := c.lbs[i].Metric(`sllbrd_liveness_probed_addresses{state="dead"}`)
	if err != nil {
		c.t.Fatal(err)
	}
	return int(v)
}

// sidecarMetric reads one series of target i's sidecar (-1: not found).
func (c *cluster) sidecarMetric(i int, series string) float64 {
	_, body, err := e2e.GetIn(c.lab, lab.TargetName(i), sidecarAddr, "/metrics")
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			if v, err := strconv.ParseFloat(rest, 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// dropFrom makes target i drop every frame from mac on its target link.
func (c *cluster) dropFrom(i int, mac string) {
	c.t.Helper()
	script := fmt.Sprintf("table netdev %s {\n chain in {\n  type filter hook ingress device %s priority -500; policy accept;\n  ether saddr %s drop\n }\n}\n",
		pruneDropTable, lab.TargetLink, mac)
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if out, err := c.lab.ExecInput(ctx, lab.TargetName(i), script, "nft", "-f", "-"); err != nil {
		c.t.Fatalf("t%d: nft: %v: %s", i, err, out)
	}
	c.t.Cleanup(func() {
		_, _ = c.lab.Exec(context.Background(), lab.TargetName(i), "nft", "delete", "table", "netdev", pruneDropTable)
	})
}
