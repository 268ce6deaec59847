package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/soak"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// The soak's lab: TestIntegrationCluster's, all of it up at once (two
// controller replicas, sllbrd in lb1..lb3, four targets with their
// sidecars), with a UDP route beside the seed's TCP ones, and traffic of
// every kind from the client all the time.

const (
	soakUDPPort = 5000
	// soakStreams is the long-lived connections per VIP.
	soakStreams = 8
	// soakStall: an exchange of a long-lived connection slower than this is
	// a stall, recorded with its duration.
	soakStall = 300 * time.Millisecond
	// soakRTO is the longest first retransmission timeout of the lab's
	// connections: Linux's is the smoothed RTT plus at least 200 ms
	// (TCP_RTO_MIN); the lab's RTT is a few milliseconds, the rest is room
	// for a loaded machine.
	soakRTO = 250 * time.Millisecond
	// soakProbeTimeout: a lost request costs its flow this long before the
	// next one, the loss windows' resolution.
	soakProbeTimeout = 500 * time.Millisecond
)

// soakUDPRoute sends UDP and SCTP 5000 of both VIPs to service-a: the
// soak's request/response flows, fragmented or not, and its SCTP
// associations (answered by the targets' kernels, which have no SCTP, with
// an ICMP error: the lab's kernel has no SCTP sockets).
const soakUDPRoute = `apiVersion: meridio.experiment.gateway.api.poc/v1alpha1
kind: L34Route
metadata:
  name: soak-udp
spec:
  parentRefs: [{name: sllb-a}]
  backendRefs: [{name: service-a, port: 1}]
  priority: 5
  destinationCIDRs: [20.0.0.1/32, "2001:db8::1/128"]
  sourcePorts: [0-65535]
  destinationPorts: ["5000"]
  protocols: [UDP, SCTP]
`

// soakLab is the cluster under the soak.
type soakLab struct {
	*cluster
	ctls      [2]*controllerProc // the controller's replicas
	ctlConfig string             // their kubeconfig
	start     time.Time
	rec       soak.Recorder
	probes    *lab.Probes
	streams   []*lab.Streams
	// broken: the reason each broken long-lived connection broke for, by
	// flow, decided when it broke (broken.go).
	broken map[string]streamBreak
	events []soak.Event
	// running are the faults under way (soak_lab_test.go's run).
	running []*runningFault
	audit   map[string]lab.RouteAudit // the LBs' route audit at the last check
	// mainAudit: the packets each LB forwarded by its main table, at the
	// last check.
	mainAudit map[string]uint64
	// kubelet plays the readiness probes; lbPods: the SLLBRs whose Pod
	// exists (one scaled down has none).
	kubelet *kubeletProbes
	lbPods  map[int]bool
	ctlLogs []string // every controller replica's log
	heaps   []heapProfile
	mem     memSeries      // soak_memory_lab_test.go
	memAt   time.Time      // the last memory sample
	burst   *writeBurstRun // the object writes under way, if any
	fails   *soakFailures  // what its checks failed on
}

// newSoakLab starts everything and waits until traffic flows through the
// three SLLBRs to the four targets.
func newSoakLab(c *cluster, fails *soakFailures) *soakLab {
	t := c.t
	s := &soakLab{cluster: c, fails: fails, broken: map[string]streamBreak{}, audit: map[string]lab.RouteAudit{},
		mainAudit: map[string]uint64{}}
	s.ctlConfig = c.cp.Kubeconfig(kubetest.ServiceAccount(clusterNS, "sllbrd-controller").Name)
	s.ctls[0] = c.ctl
	s.ctls[1] = startControllerProc(t, s.ctlConfig, clusterNS)
	s.ctlLogs = []string{s.ctls[0].logPath, s.ctls[1].logPath}
	// Longer than kubelet's readiness detection (failureThreshold x
	// probePeriod): the controller takes a stopping SLLBR out of the
	// targets' next hops before it exits, as deploy/'s 10 s drain allows.
	c.lbArgs = []string{"--drain", "6s", "--pprof-address", soakPprof, "--dataplane", *soakDataplane}
	// Every sllbrd serves pprof, for the soak to read its live heap (the
	// controller replicas each on a port of their own: controllerProc).
	c.sidecarArgs = []string{"--pprof-address", soakPprof}
	t.Cleanup(s.keepLogsOnFailure) // before the lab's cleanup removes them
	objs, err := kubetest.DecodeObjects([]byte(soakUDPRoute))
	if err != nil {
		s.fails.fatalf(t, "%v", err)
	}
	if _, err := c.dyn.Create(c.ctx, clusterNS, objs[0]); err != nil {
		s.fails.fatalf(t, "%v", err)
	}
	for _, lb := range c.lab.LBs() {
		if err := c.lab.InstallRouteAudit(c.ctx, lb); err != nil {
			s.fails.fatalf(t, "%v", err)
		}
		installMainTableAudit(t, c.lab, lb)
	}
	s.kubelet, s.lbPods = newKubeletProbes(), map[int]bool{}
	for i := 1; i <= 3; i++ {
		c.startLB(i)
		s.lbPods[i], s.kubelet.ready[sllbrPod(i)] = true, true
	}
	for i := 1; i <= 4; i++ {
		c.startTarget(i)
		s.kubelet.ready[lab.TargetName(i)] = true
	}
	c.waitGatewayVia(1, 2, 3)
	waitFor(t, time.Minute, "every target's next hops are lb1..lb3", func() bool {
		return c.allTargets([]int{1, 2, 3, 4}, func(st targetpod.Status) bool { return st.Ready && hopsOf(st) == wantHops(1, 2, 3) })
	})
	waitFor(t, time.Minute, "UDP flows to both VIPs reach all four targets", func() bool {
		for _, vip := range []netip.Addr{vip4, vip6} {
			ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
			got, err := c.lab.Flows(ctx, lab.FlowOptions{VIP: vip, Port: soakUDPPort, Count: 64, Timeout: 500 * time.Millisecond})
			cancel()
			if err != nil || len(lab.Distribution(got)) != 4 {
				return false
			}
		}
		return true
	})
	c.waitTables(4, 1, 2, 3) // the traffic's TCP flows must not straddle an apply
	for _, lb := range c.lab.LBs() {
		a, err := c.lab.ReadRouteAudit(c.ctx, lb)
		if err != nil {
			s.fails.fatalf(t, "%v", err)
		}
		s.audit[lb] = a
		s.mainAudit[lb] = readMainTableAudit(t, c.lab, lb)
	}
	return s
}

// startTraffic starts the probes and the long-lived connections.
func (s *soakLab) startTraffic() {
	t := s.t
	p, err := s.lab.StartProbes(s.ctx, lab.ProbeOptions{
		VIPs:    []netip.Addr{vip4, vip6},
		UDPPort: soakUDPPort, UDPFlows: 8, UDPSrcBase: 31000,
		TCPPort: flowPort, TCPPerSecond: 4,
		FragBytes: 3000, FragSrcPort: 31100,
		Ping: true, PingID: 0x50a4,
		SCTPPort: soakUDPPort, SCTPSrcPort: 31200,
		Timeout: soakProbeTimeout,
	}, func(r lab.ProbeResult) { s.rec.Add(probeSample(r)) })
	if err != nil {
		s.fails.fatalf(t, "%v", err)
	}
	s.probes = p
	t.Cleanup(func() { _ = s.probes.Stop() })
	for _, vip := range []netip.Addr{vip4, vip6} {
		s.openStreams(vip, soakStreams)
	}
}

// soakStreamTimeout is how long a long-lived connection waits for an
// echo before it counts as broken: longer than an exchange may take through
// any fault (streamBound of the largest bound), so that a slow exchange is
// judged as a stall against its fault's bound, and only a connection that
// no longer works breaks.
func soakStreamTimeout() time.Duration {
	var b time.Duration
	for _, sp := range soakSpecs() {
		b = max(b, sp.Bound)
	}
	return streamBound(b) + time.Second
}

// openStreams opens n more long-lived connections to vip.
func (s *soakLab) openStreams(vip netip.Addr, n int) {
	st, err := s.lab.OpenStreams(s.ctx, lab.StreamOptions{VIP: vip, Port: echoPort, Count: n,
		Interval: 100 * time.Millisecond, PayloadBytes: 512, StallAfter: soakStall, Timeout: soakStreamTimeout()})
	if err != nil {
		s.fails.fatalf(s.t, "open %d long-lived connections to %v: %v", n, vip, err)
	}
	s.streams = append(s.streams, st)
	s.t.Cleanup(func() { st.Close() })
}

// stopTraffic stops the probes and closes the connections, and records
// what the connections saw.
func (s *soakLab) stopTraffic() {
	if err := s.probes.Stop(); err != nil {
		s.fails.errorf(s.t, "probes: %v", err)
	}
	for _, st := range s.streams {
		for _, ss := range st.Close() {
			for _, sample := range streamSamples(ss) {
				s.rec.Add(sample)
			}
		}
	}
}

// probeSample is r as the analysis reads it.
func probeSample(r lab.ProbeResult) soak.Sample {
	out := soak.Sample{At: r.At, Kind: r.Kind, Flow: r.Flow, Target: r.Target, RTT: r.RTT}
	if r.Err != nil {
		out.Err = r.Err.Error()
	}
	return out
}

// streamSamples are a long-lived connection's stalls and break.
func streamSamples(st lab.StreamStats) []soak.Sample {
	kind := "stream4"
	if st.Flow.Dst.Addr().Is6() {
		kind = "stream6"
	}
	var out []soak.Sample
	for _, stall := range st.Stalls {
		out = append(out, soak.Sample{At: stall.At, Kind: kind, Flow: st.Flow.String(), Target: st.Target, RTT: stall.RTT})
	}
	if st.Err != nil {
		out = append(out, soak.Sample{At: st.BrokeAt, Kind: kind, Flow: st.Flow.String(), Target: st.Target, Err: st.Err.Error()})
	}
	return out
}

// checkRouteAudit fails the test when an LB routed a packet sllbrd marked
// by any other way than to a target, or forwarded any packet by its main
// table, since the last check, naming the faults since.
func (s *soakLab) checkRouteAudit(since string) {
	for _, lb := range s.lab.LBs() {
		a, err := s.lab.ReadRouteAudit(s.ctx, lb)
		if err != nil {
			s.fails.fatalf(s.t, "%v", err)
		}
		was := s.audit[lb]
		if d4, d6 := a.V4.Elsewhere-was.V4.Elsewhere, a.V6.Elsewhere-was.V6.Elsewhere; d4+d6 != 0 {
			s.fails.errorf(s.t, "%s routed %d IPv4 and %d IPv6 packets sllbrd decided to a target some other way %s",
				lb, d4, d6, since)
		}
		s.audit[lb] = a
		main := readMainTableAudit(s.t, s.lab, lb)
		if d := main - s.mainAudit[lb]; d != 0 {
			s.fails.errorf(s.t, "%s forwarded %d packets by its main table (to the pod network) %s", lb, d, since)
		}
		s.mainAudit[lb] = main
	}
}

// The LBs' main table routes, as a pod's does, to the cluster network:
// here an eth0 without carrier, where what it forwards is lost and counted. The lab's
// own default route via the gateway would deliver a reply that sllbrd's
// return path left to the main table.
const mainAuditTable = "sllbrd_soak_main"

func installMainTableAudit(t *testing.T, l *lab.Lab, lb string) {
	t.Helper()
	// A veth whose peer stays down (no dummy driver here): eth0 has no
	// carrier, and what is routed to it goes nowhere.
	exec1(t, l, lb, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer")
	exec1(t, l, lb, "ip", "link", "set", "eth0", "up")
	for _, fam := range []string{"-4", "-6"} {
		exec1(t, l, lb, "ip", fam, "route", "replace", "default", "dev", "eth0")
	}
	exec1(t, l, lb, "nft", "add table inet "+mainAuditTable+"; "+
		"add chain inet "+mainAuditTable+" fw { type filter hook forward priority filter; policy accept; }; "+
		"add counter inet "+mainAuditTable+" main; "+
		"add rule inet "+mainAuditTable+` fw oifname "eth0" counter name main`)
}

// readMainTableAudit is how many packets lb forwarded to eth0.
func readMainTableAudit(t *testing.T, l *lab.Lab, lb string) uint64 {
	t.Helper()
	n, err := l.NftCounter(context.Background(), lb, mainAuditTable, "main")
	if err != nil {
		t.Fatalf("main table audit: %v", err)
	}
	return n
}

// activeTargets lists the lab targets whose sidecar runs.
func (s *soakLab) activeTargets() []int {
	var out []int
	for i := range s.sidecars {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

func (s *soakLab) elapsed() string {
	return fmt.Sprint(time.Since(s.start).Round(100 * time.Millisecond))
}
