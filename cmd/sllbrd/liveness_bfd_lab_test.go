package main

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/kube"
)

// icmpAnnotation is bfdAnnotation probed by ICMP.
const icmpAnnotation = "interval=200ms,multiplier=4,hold-down=5s"

// udpRoute sends UDP 5000 to the lab's VIPs to service-a, so that the
// cluster carries the stream of fixed flows the liveness tests measure.
const udpRoute = `apiVersion: meridio.experiment.gateway.api.poc/v1alpha1
kind: L34Route
metadata:
  name: liveness-udp-5000
spec:
  parentRefs: [{name: sllb-a}]
  backendRefs: [{name: service-a, port: 1}]
  priority: 10
  destinationCIDRs: [20.0.0.1/32, "2001:db8::1/128"]
  sourcePorts: [0-65535]
  destinationPorts: ["5000"]
  protocols: [UDP]
`

// TestIntegrationLivenessBFDFrozenTarget: the whole system (kube-apiserver,
// the controller, two SLLBRs, three targets with their real `sllbrd
// target` sidecars), both families. With probe=bfd, a target whose pod is
// frozen (its sidecar and its application stopped with SIGSTOP, as the
// cgroup freezer stops a pod; its kernel still answers ICMP) is found dead
// by both SLLBRs within the detection time: its new flows go to the other
// targets, each where sllbrd explain says, and no other flow moves; thawed,
// its flows return after the hold-down. With probe=icmp the same freeze
// is not found: the limit of ICMP, documented (docs/liveness.md).
func TestIntegrationLivenessBFDFrozenTarget(t *testing.T) {
	require.Lab(t)
	c := newTwoLBCluster(t)
	apps := c.serveUDP([]int{1, 2, 3})

	c.setLiveness(bfdAnnotation)
	took := waitFor(t, time.Minute, "every target alive by BFD for both SLLBRs, its sessions up", func() bool {
		return c.probedBy("bfd", []string{"t1", "t2", "t3"}, true)
	})
	t.Logf("probe=bfd: every endpoint's BFD session up and alive %v after the annotation", took.Round(time.Millisecond))
	flapped := c.reportBFDDeaths("probe=bfd turned on")
	served := baselineFlows(t, c.lab, 45000)
	s := startStream(t, c.lab, streamFlowsOf(served, "t2", 12), 5000)
	time.Sleep(300 * time.Millisecond) // every flow answered before the freeze

	before := map[int]map[netip.Addr]uint64{1: c.transitions(1, "t2"), 2: c.transitions(2, "t2")}
	frozenAt := time.Now()
	c.freeze(2, apps[2])
	c.checkPings("t2")
	tls := waitTimelines(t, s, "t2", frozenAt, time.Time{}, 5*time.Second, func(tl timeline) bool { return !tl.allMoved.IsZero() })
	for _, i := range []int{1, 2} {
		checkExplained(t, c.lbs[i], s, tls)
		c.checkShowsProbe(i, "t2", "bfd", false, before[i])
	}
	time.Sleep(time.Second) // the moved flows stay where they are

	thawedAt := time.Now()
	c.thaw(2, apps[2])
	// Thawed, t2 answers at once the requests queued while it was frozen:
	// they were sent before its flows moved, and are not its return.
	checkReturn(t, s, "frozen pod, probe=bfd", frozenAt, 0, thawedAt, bfdBackSlack, 500*time.Millisecond)
	answers, _ := s.snapshot()
	stale := 0
	for _, a := range answers {
		if a.target == "t2" && a.at.After(thawedAt) && a.at.Before(thawedAt.Add(500*time.Millisecond)) {
			stale++
		}
	}
	t.Logf("thawed, t2 answered at once %d requests queued while it was frozen (its last answer in the timelines above)", stale)
	c.checkBFDEvents(frozenAt, flapped)
	if t.Failed() {
		return
	}

	c.icmpMissesFrozen(apps[2])
}

// icmpMissesFrozen: with probe=icmp the same freeze goes unnoticed: the
// frozen target's kernel answers the echo requests, so it stays alive for
// both SLLBRs, its flows stay on it unanswered and no other flow moves.
func (c *cluster) icmpMissesFrozen(app *lab.Process) {
	t := c.t
	c.setLiveness(icmpAnnotation)
	waitFor(t, 30*time.Second, "every target alive by ICMP for both SLLBRs", func() bool {
		return c.probedBy("icmp", []string{"t1", "t2", "t3"}, true)
	})
	served := baselineFlows(t, c.lab, 46000)
	s := startStream(t, c.lab, streamFlowsOf(served, "t2", 12), 5000)
	time.Sleep(300 * time.Millisecond)
	frozenAt := time.Now()
	c.freeze(2, app)
	time.Sleep(3*labDetection + time.Second)
	for _, i := range []int{1, 2} {
		c.checkShowsProbe(i, "t2", "icmp", true, nil)
	}
	checkNoneMoved(t, s, "frozen pod, probe=icmp (its kernel answers echo)", frozenAt)
	c.thaw(2, app)
}

// serveUDP adds the UDP route and starts, in each target of targets, an
// application answering UDP 5000 on the VIPs beside the lab's own
// responder (which serves TCP only in the cluster lab), and waits until
// flows of both families reach every target. It returns the applications
// by target number.
func (c *cluster) serveUDP(targets []int) map[int]*lab.Process {
	c.t.Helper()
	bin, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", c.lab.Responder(lab.TargetName(targets[0])).PID))
	if err != nil {
		c.t.Fatal(err)
	}
	apps := map[int]*lab.Process{}
	for _, i := range targets {
		name := lab.TargetName(i)
		p, err := c.lab.Start(name, "udp-responder-"+name, bin, "-name", name, "-addr", vip4.String()+","+vip6.String(), "-udp", "5000")
		if err != nil {
			c.t.Fatal(err)
		}
		apps[i] = p
	}
	objs, err := kubetest.DecodeObjects([]byte(udpRoute))
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.dyn.Create(c.ctx, clusterNS, objs[0]); err != nil {
		c.t.Fatal(err)
	}
	waitFor(c.t, 30*time.Second, "UDP flows of both families answered by the three targets", func() bool {
		for _, vip := range []netip.Addr{vip4, vip6} {
			got, err := c.lab.Flows(c.ctx, lab.FlowOptions{VIP: vip, Port: 5000, Count: 30, SrcPortBase: 47000, Timeout: 300 * time.Millisecond})
			if err != nil || len(lab.Distribution(got)) != len(targets) {
				return false
			}
		}
		return true
	})
	return apps
}

// setLiveness writes service-a's endpoint-liveness annotation.
func (c *cluster) setLiveness(value string) {
	c.t.Helper()
	svcs := c.kube.CoreV1().Services(clusterNS)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := svcs.Get(c.ctx, "service-a", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[kube.AnnotationEndpointLiveness] = value
		_, err = svcs.Update(c.ctx, svc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		c.t.Fatal(err)
	}
}

// probedBy reports whether every SLLBR probes the targets' addresses in
// service-a by probe, finds them all alive (or all dead), and, for bfd,
// has each one's session up.
func (c *cluster) probedBy(probe string, targets []string, alive bool) bool {
	c.t.Helper()
	for _, inst := range c.lbs {
		for _, tg := range targets {
			addrs, svc := showEndpoint(c.t, inst, tg)
			if svc.Liveness.Probe != probe || len(addrs) != 2 {
				return false
			}
			for _, a := range addrs {
				if a.Liveness == nil || a.Liveness.Probe != probe || a.Liveness.Alive != alive {
					return false
				}
				if probe == "bfd" && !sessionUp(c.t, inst, a.Address) {
					return false
				}
			}
		}
	}
	return true
}

// reportBFDDeaths reports the endpoints the SLLBRs found dead by BFD so
// far (when, for the message), with the SLLBRs' and the targets' BFD log
// lines. Expected none: a session that flaps while coming up (a stale Down
// written after a newer packet, which package bfd now prevents by writing
// each session's packets in the order they were built) takes its endpoint
// out for a hold-down. Reported, not failed: the freeze below is what this
// test measures, and it counts its own transition.
func (c *cluster) reportBFDDeaths(when string) (flapped bool) {
	c.t.Helper()
	dead := 0.0
	for _, inst := range c.lbs {
		v, _, err := inst.Metric("sllbrd_liveness_bfd_dead_total{")
		if err != nil {
			c.t.Fatal(err)
		}
		dead += v
	}
	if dead == 0 {
		return false
	}
	c.t.Logf("NOTE: %s: the SLLBRs found endpoints dead by BFD %v times (a session flap while coming up); their BFD log lines:", when, dead)
	logs := map[string]string{}
	for i, inst := range c.lbs {
		logs[lab.LBName(i)] = inst.Proc.LogPath
	}
	for i, p := range c.sidecars {
		logs[lab.TargetName(i)] = p.LogPath
	}
	for node, path := range logs {
		b, _ := os.ReadFile(path)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "BFD") || strings.Contains(line, "bfd session") {
				c.t.Logf("%s: %s", node, line)
			}
		}
	}
	return true
}

// transitions returns what show on LB i says of the transitions of the
// target's addresses in service-a.
func (c *cluster) transitions(i int, target string) map[netip.Addr]uint64 {
	c.t.Helper()
	addrs, _ := showEndpoint(c.t, c.lbs[i], target)
	out := map[netip.Addr]uint64{}
	for _, a := range addrs {
		if a.Liveness != nil {
			out[a.Address] = a.Liveness.Transitions
		}
	}
	return out
}

// podProcesses are the PIDs of target i's pod: its sidecar, the lab's
// responder and the UDP application.
func (c *cluster) podProcesses(i int, app *lab.Process) []int {
	return []int{c.sidecars[i].PID, c.lab.Responder(lab.TargetName(i)).PID, app.PID}
}

// freeze stops every process of target i's pod with SIGSTOP, as the
// cgroup freezer stops a pod: nothing in it runs, its kernel still
// answers. They are continued at the end of the test in any case.
func (c *cluster) freeze(i int, app *lab.Process) {
	c.t.Helper()
	pids := c.podProcesses(i, app)
	c.t.Cleanup(func() { signalAll(pids, syscall.SIGCONT) })
	if err := signalAll(pids, syscall.SIGSTOP); err != nil {
		c.t.Fatal(err)
	}
}

// thaw continues target i's pod.
func (c *cluster) thaw(i int, app *lab.Process) {
	c.t.Helper()
	if err := signalAll(c.podProcesses(i, app), syscall.SIGCONT); err != nil {
		c.t.Fatal(err)
	}
}

func signalAll(pids []int, sig syscall.Signal) error {
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("kill -%v %d: %w", sig, pid, err)
		}
	}
	return nil
}

// checkPings: the frozen target's kernel still answers echo requests from
// an SLLBR, on both families.
func (c *cluster) checkPings(target string) {
	c.t.Helper()
	i := int(target[1] - '0')
	for _, a := range []netip.Addr{lab.TargetAddrs(i).V4.Addr(), lab.TargetAddrs(i).V6.Addr()} {
		if out, err := c.lab.Exec(c.ctx, lab.LBName(1), "ping", "-c", "1", "-W", "1", a.String()); err != nil {
			c.t.Errorf("the frozen %s does not answer ping on %v: %v: %s", target, a, err, out)
		}
	}
}

// checkShowsProbe: show on LB i says service-a probes by probe and the
// target's addresses are alive and ready, or dead and not ready after one
// transition more than before.
func (c *cluster) checkShowsProbe(i int, target, probe string, alive bool, before map[netip.Addr]uint64) {
	c.t.Helper()
	addrs, svc := showEndpoint(c.t, c.lbs[i], target)
	if svc.Liveness.Probe != probe || len(addrs) != 2 {
		c.t.Fatalf("lb%d: service-a liveness %+v, %d addresses of %s; want probed by %s, 2", i, svc.Liveness, len(addrs), target, probe)
	}
	for _, a := range addrs {
		l := a.Liveness
		if l == nil || l.Probe != probe || l.Alive != alive || a.Ready != alive || (!alive && l.Transitions != before[a.Address]+1) {
			c.t.Errorf("lb%d: %s: %+v (liveness %+v), want probed by %s, alive %v", i, a.Address, a, l, probe, alive)
		}
	}
	if text := sllbrd(c.t, c.lbs[i].AdminSocket, "show", "endpoints"); !alive {
		c.t.Logf("lb%d: sllbrd show endpoints:\n%s", i, text)
	}
}

// checkBFDEvents: each SLLBR wrote an EndpointDead Event regarding
// service-a for each address of the target frozen at frozenAt, saying its
// BFD session went down. After a flap while the sessions came up (flapped)
// an endpoint's Event of the freeze may be left out by the rate limit (one
// per endpoint per minute): then only the notes are checked.
func (c *cluster) checkBFDEvents(frozenAt time.Time, flapped bool) {
	c.t.Helper()
	evs, err := c.kube.EventsV1().Events(clusterNS).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for _, ev := range evs.Items {
		if ev.Reason != reasonEndpointDead || ev.Regarding.Name != "service-a" {
			continue
		}
		after := ev.EventTime.Sub(frozenAt)
		c.t.Logf("Event %s %s from %s, %v after the freeze: %s", ev.Type, ev.Reason, ev.ReportingInstance, after.Round(time.Millisecond), ev.Note)
		if !strings.Contains(ev.Note, "probe=bfd") {
			continue // of ICMP, before probe=bfd
		}
		if !strings.Contains(ev.Note, "its BFD session went down") || ev.Type != corev1.EventTypeWarning {
			c.t.Errorf("Event %s %s: %s", ev.Type, ev.Reason, ev.Note)
		}
		if after > 0 {
			n++
		}
	}
	if n != 4 && !flapped {
		c.t.Errorf("%d EndpointDead Events of service-a by BFD after the freeze, want 4 (two SLLBRs, two addresses)", n)
	}
}
