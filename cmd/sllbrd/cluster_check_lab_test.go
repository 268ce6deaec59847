package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// status reads target i's status annotation (zero Status when absent).
func (c *cluster) status(i int) targetpod.Status {
	c.t.Helper()
	s, _ := targetpod.ParseStatus(c.pod(lab.TargetName(i)).Annotations[kube.AnnotationTargetNetworkStatus])
	return s
}

// hopsOf renders a status's next hops of sllb-a as "v4 v4 | v6 v6".
func hopsOf(s targetpod.Status) string {
	for _, g := range s.Gateways {
		if g.Name == "sllb-a" {
			return fmt.Sprint(g.NextHops.IPv4, " ", g.NextHops.IPv6)
		}
	}
	return ""
}

// vipsOf lists a status's VIPs of sllb-a.
func vipsOf(s targetpod.Status) []netip.Prefix {
	for _, g := range s.Gateways {
		if g.Name == "sllb-a" {
			return g.VIPs
		}
	}
	return nil
}

// wantHops is hopsOf for the net1 addresses of LBs lbs.
func wantHops(lbs ...int) string {
	var v4, v6 []netip.Addr
	for _, i := range lbs {
		v4 = append(v4, lab.LBTargetSide(i).V4.Addr())
		v6 = append(v6, lab.LBTargetSide(i).V6.Addr())
	}
	return fmt.Sprint(v4, " ", v6)
}

// allTargets reports whether ok holds for the status of every target.
func (c *cluster) allTargets(targets []int, ok func(targetpod.Status) bool) bool {
	for _, i := range targets {
		if s := c.status(i); !ok(s) {
			return false
		}
	}
	return true
}

// counters reads LB i's VIP counters.
func (c *cluster) counters(i int) lab.VIPTraffic {
	c.t.Helper()
	v, err := c.lab.ReadVIPCounters(c.ctx, lab.LBName(i))
	if err != nil {
		c.t.Fatal(err)
	}
	return v
}

// gatewayVia returns the LB numbers the gateway routes vip through.
func (c *cluster) gatewayVia(vip netip.Addr) []int {
	c.t.Helper()
	fam := "-4"
	if vip.Is6() {
		fam = "-6"
	}
	out := exec1(c.t, c.lab, lab.GatewayNode, "ip", fam, "route", "show", netip.PrefixFrom(vip, vip.BitLen()).String())
	var lbs []int
	for i := 1; i <= 3; i++ {
		if strings.Contains(out, "via "+lab.LBGatewaySide(i).For(vip).String()+" ") {
			lbs = append(lbs, i)
		}
	}
	return lbs
}

// probe runs n TCP flows to vip and reports whether all were answered by
// targets, with the targets that answered.
func (c *cluster) probe(vip netip.Addr, n int) (bool, map[string]int) {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	got, err := c.lab.Flows(ctx, lab.FlowOptions{VIP: vip, Port: flowPort, Proto: "tcp", Count: n, Timeout: 500 * time.Millisecond, Parallel: n})
	return err == nil && len(got) == n, lab.Distribution(got)
}

// auditTargets checks that the targets have no route of their own for
// VIP traffic: no default route in main (only the management and net1
// subnets), and no rule at another priority than sllbrd's taking it.
func (c *cluster) auditTargets(targets []int) {
	c.t.Helper()
	for _, i := range targets {
		node := lab.TargetName(i)
		for _, fam := range []string{"-4", "-6"} {
			if out := exec1(c.t, c.lab, node, "ip", fam, "route", "show", "default"); strings.TrimSpace(out) != "" {
				c.t.Errorf("%s has a default route of its own: %s", node, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(exec1(c.t, c.lab, node, "ip", fam, "rule")), "\n") {
				prio, _, _ := strings.Cut(line, ":")
				if !slices.Contains([]string{"0", "32766", "32767", strconv.Itoa(targetnet.RulePriority), strconv.Itoa(targetnet.DropRulePriority)}, prio) {
					c.t.Errorf("%s has a rule not sllbrd's: %s", node, line)
				}
			}
		}
	}
}

// cost is one process's resource use at rest.
type cost struct {
	name   string
	pid    int
	cpu    time.Duration // over the window
	rss    uint64
	anon   uint64 // RSS that is the process's own (the rest: the binary's shared pages)
	window time.Duration
}

func (k cost) String() string {
	return fmt.Sprintf("%-36s RSS %5.1f MiB (own %4.1f MiB)  CPU %4.1f millicores", k.name, float64(k.rss)/(1<<20),
		float64(k.anon)/(1<<20), float64(k.cpu.Microseconds())/1000/k.window.Seconds())
}

// costs measures every process of the system over window.
func (c *cluster) costs(window time.Duration, extra map[string]int) []cost {
	c.t.Helper()
	procs := map[string]int{"sllbrd controller": c.ctl.cmd.Process.Pid, "BIRD (gateway)": c.bird.Process.PID}
	for i, inst := range c.lbs {
		procs[fmt.Sprintf("sllbrd (SLLBR lb%d)", i)] = inst.Proc.PID
	}
	for i, p := range c.sidecars {
		procs[fmt.Sprintf("sllbrd target (t%d)", i)] = p.PID
	}
	for name, pid := range extra {
		procs[name] = pid
	}
	before := map[string]lab.ProcStats{}
	for name, pid := range procs {
		s, err := lab.ReadProcStats(pid)
		if err != nil {
			c.t.Fatalf("%s: %v", name, err)
		}
		before[name] = s
	}
	time.Sleep(window)
	var out []cost
	for name, pid := range procs {
		s, err := lab.ReadProcStats(pid)
		if err != nil {
			c.t.Fatalf("%s: %v", name, err)
		}
		out = append(out, cost{name: name, pid: pid, cpu: s.CPU() - before[name].CPU(), rss: s.RSS, anon: s.RSSAnon, window: window})
	}
	slices.SortFunc(out, func(a, b cost) int { return strings.Compare(a.name, b.name) })
	return out
}

// controlPlanePIDs finds kube-apiserver and etcd among the test's children.
func controlPlanePIDs() map[string]int {
	out := map[string]int{}
	self := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		s := string(b)
		open, shut := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || shut < open {
			continue
		}
		comm, rest := s[open+1:shut], strings.Fields(s[shut+1:])
		if len(rest) > 1 && rest[1] == self && (comm == "kube-apiserver" || comm == "etcd") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			out[comm+" (test control plane)"] = pid
		}
	}
	return out
}
