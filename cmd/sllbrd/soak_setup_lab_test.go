package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
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
)

// soakUDPRoute sends UDP 5000 of both VIPs to service-a: the soak's
// request/response flows, fragmented or not.
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
  protocols: [UDP]
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
	audit  map[string]lab.RouteAudit // the LBs' route audit at the last check
}

// newSoakLab starts everything and waits until traffic flows through the
// three SLLBRs to the four targets.
func newSoakLab(c *cluster) *soakLab {
	t := c.t
	s := &soakLab{cluster: c, broken: map[string]streamBreak{}, audit: map[string]lab.RouteAudit{}}
	s.ctlConfig = c.cp.Kubeconfig(kubetest.ServiceAccount(clusterNS, "sllbrd-controller").Name)
	s.ctls[0] = c.ctl
	s.ctls[1] = startControllerProc(t, s.ctlConfig, clusterNS)
	objs, err := kubetest.DecodeObjects([]byte(soakUDPRoute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.dyn.Create(c.ctx, clusterNS, objs[0]); err != nil {
		t.Fatal(err)
	}
	for _, lb := range c.lab.LBs() {
		if err := c.lab.InstallRouteAudit(c.ctx, lb); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3; i++ {
		c.startLB(i)
	}
	for i := 1; i <= 4; i++ {
		c.startTarget(i)
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
	for _, lb := range c.lab.LBs() {
		a, err := c.lab.ReadRouteAudit(c.ctx, lb)
		if err != nil {
			t.Fatal(err)
		}
		s.audit[lb] = a
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
		// A lost request costs its flow this long before the next one: the
		// loss windows' resolution.
		Timeout: 500 * time.Millisecond,
	}, func(r lab.ProbeResult) { s.rec.Add(probeSample(r)) })
	if err != nil {
		t.Fatal(err)
	}
	s.probes = p
	t.Cleanup(func() { _ = s.probes.Stop() })
	for _, vip := range []netip.Addr{vip4, vip6} {
		s.openStreams(vip, soakStreams)
	}
}

// openStreams opens n more long-lived connections to vip.
func (s *soakLab) openStreams(vip netip.Addr, n int) {
	st, err := s.lab.OpenStreams(s.ctx, lab.StreamOptions{VIP: vip, Port: echoPort, Count: n,
		Interval: 100 * time.Millisecond, PayloadBytes: 512, StallAfter: soakStall})
	if err != nil {
		s.t.Fatalf("open %d long-lived connections to %v: %v", n, vip, err)
	}
	s.streams = append(s.streams, st)
	s.t.Cleanup(func() { st.Close() })
}

// stopTraffic stops the probes and closes the connections, and records
// what the connections saw.
func (s *soakLab) stopTraffic() {
	if err := s.probes.Stop(); err != nil {
		s.t.Errorf("probes: %v", err)
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
// by any other way than to a target (the main table) since the last
// check, naming the faults since.
func (s *soakLab) checkRouteAudit(since string) {
	for _, lb := range s.lab.LBs() {
		a, err := s.lab.ReadRouteAudit(s.ctx, lb)
		if err != nil {
			s.t.Fatal(err)
		}
		was := s.audit[lb]
		if d4, d6 := a.V4.Elsewhere-was.V4.Elsewhere, a.V6.Elsewhere-was.V6.Elsewhere; d4+d6 != 0 {
			s.t.Errorf("%s routed %d IPv4 and %d IPv6 packets sllbrd decided to a target some other way (the main table) %s",
				lb, d4, d6, since)
		}
		s.audit[lb] = a
	}
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
