package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/soak"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// The soak's faults: what each does, undoes, and when the system is back.

const (
	faultSigkill    soak.Kind = "SLLBR SIGKILL"
	faultSigterm    soak.Kind = "SLLBR SIGTERM"
	faultScale      soak.Kind = "SLLBR 3 -> 2 -> 3"
	faultController soak.Kind = "leading controller killed"
	faultAPIServer  soak.Kind = "kube-apiserver restarted"
	faultBIRD       soak.Kind = "BIRD restarted"
	faultLinkFlap   soak.Kind = "target link flap"
	faultRecreate   soak.Kind = "target Pod deleted and re-created"
	faultReadiness  soak.Kind = "target readiness flap"
	faultRouteEdit  soak.Kind = "L34Route edits"
	faultBurst      soak.Kind = "1,000 object writes"
)

// usesAPI are the faults that write to the API: none overlaps a
// kube-apiserver restart.
var usesAPI = []soak.Kind{faultScale, faultController, faultRecreate, faultReadiness, faultRouteEdit, faultBurst}

var (
	// The faults that end a process spare lb1 and t1: their processes live
	// through the soak, for the resources' flatness to be measured on them.
	soakLBs            = []string{"lb2", "lb3"}
	soakTargets        = []string{"t1", "t2", "t3", "t4"}
	soakTargetsRestart = []string{"t2", "t3", "t4"}
)

// soakSpecs are the faults and their bounds: the longest loss window of a
// flow through what the fault hits (docs/reliability.md explains each). A
// loss window is measured with the probes' resolution: up to a probe's
// timeout (soakProbeTimeout) more than the outage.
func soakSpecs() []soak.Spec {
	return []soak.Spec{
		// BIRD drops the SLLBR after BFD's detection (300 ms x 5).
		{Kind: faultSigkill, Weight: 3, Targets: soakLBs, Hold: 2 * time.Second, Bound: 1500*time.Millisecond + soakProbeTimeout + 500*time.Millisecond},
		// The SLLBR withdraws, drains 1 s, exits: nothing lost.
		{Kind: faultSigterm, Weight: 2, Targets: soakLBs, Hold: 2 * time.Second},
		{Kind: faultScale, Weight: 2, Targets: soakLBs, Hold: 3 * time.Second, Excludes: []soak.Kind{faultAPIServer}},
		// The dataplane does not need the controller. An SLLBR leaving does:
		// with probe=icmp only the controller takes it out of the targets'
		// next hops (docs/reliability.md, known limits), so no SLLBR leaves
		// while no controller leads.
		{Kind: faultController, Weight: 2, Hold: 2 * time.Second, Excludes: []soak.Kind{faultAPIServer, faultScale, faultSigterm}},
		// Nor the API. An SLLBR ending does (its Pod's readiness reaches the
		// controller through it): none ends during an outage.
		{Kind: faultAPIServer, Weight: 1, Hold: 3 * time.Second, Excludes: append([]soak.Kind{faultSigkill, faultSigterm}, usesAPI...)},
		// The gateway has no route until BGP is back up with each SLLBR.
		{Kind: faultBIRD, Weight: 1, Hold: time.Second, Bound: 10 * time.Second},
		// The target's flows are lost until the SLLBRs' ICMP probes find it
		// dead (200 ms x 4) and Maglev gives them to the others.
		{Kind: faultLinkFlap, Weight: 3, Targets: soakTargets, Hold: 2 * time.Second, Bound: 800*time.Millisecond + soakProbeTimeout + 500*time.Millisecond},
		// The Pod's namespace goes with it: its flows are lost until the
		// controller takes the endpoint out or the ICMP probes find it
		// dead, whichever is first. Not while no controller leads: the
		// Pod re-created at the same address answers the probes before
		// it has its VIPs (docs/reliability.md, known limits).
		{Kind: faultRecreate, Weight: 2, Targets: soakTargetsRestart, Hold: 3 * time.Second, Bound: 800*time.Millisecond + soakProbeTimeout + 500*time.Millisecond,
			Excludes: []soak.Kind{faultAPIServer, faultController}},
		// Not ready: the target's flows move to the others, nothing lost.
		{Kind: faultReadiness, Weight: 2, Targets: soakTargets, Hold: 2 * time.Second, Excludes: []soak.Kind{faultAPIServer}},
		{Kind: faultRouteEdit, Weight: 2, Hold: 3 * time.Second, Excludes: []soak.Kind{faultAPIServer}},
		{Kind: faultBurst, Weight: 1, Excludes: []soak.Kind{faultAPIServer}},
	}
}

// endpointKinds are the faults that change service-a's endpoints: flows
// move (Maglev) and the target's own connections break.
var endpointKinds = []soak.Kind{faultLinkFlap, faultRecreate, faultReadiness}

// soakFault is one fault's steps, all run in the test's goroutine.
type soakFault struct {
	inject, revert func() error
}

// fault returns f's steps.
func (s *soakLab) fault(f soak.Fault) soakFault {
	n, _ := strconv.Atoi(f.Target[len(f.Target)-1:])
	switch f.Kind {
	case faultSigkill:
		return soakFault{func() error { return s.stopLB(n, s.lbs[n].Proc.Kill) }, func() error { return s.restartLB(n) }}
	case faultSigterm:
		return soakFault{func() error { return s.stopLB(n, func() error { return s.terminate(n) }) },
			func() error { return s.restartLB(n) }}
	case faultScale:
		return soakFault{func() error { return s.scaleDown(n) }, func() error {
			if err := s.restartLB(n); err != nil {
				return err
			}
			s.postLBPodReady(n, false) // kubelet's probes make it Ready
			s.lbPods[n], s.kubelet.ready[sllbrPod(n)] = true, false
			return nil
		}}
	case faultController:
		return soakFault{s.killLeader, s.restartControllers}
	case faultAPIServer:
		return soakFault{func() error { s.cp.StopAPIServer(); return nil }, func() error { s.cp.StartAPIServer(); return nil }}
	case faultBIRD:
		return soakFault{s.bird.Stop, s.restartBIRD}
	case faultLinkFlap:
		return soakFault{s.link(f.Target, "down"), s.link(f.Target, "up")}
	case faultRecreate:
		return soakFault{func() error { return s.deleteTarget(n) }, func() error {
			if err := s.link(f.Target, "up")(); err != nil { // the new Pod's namespace
				return err
			}
			s.startTarget(n) // Ready: its sidecar's /readyz said so
			s.kubelet.ready[f.Target], s.kubelet.fails[f.Target] = true, 0
			return nil
		}}
	case faultReadiness: // the application container's readiness fails
		return soakFault{func() error { s.kubelet.notReady[f.Target] = true; return s.writeReady(f.Target, false) },
			func() error { s.kubelet.notReady[f.Target] = false; return s.writeReady(f.Target, true) }}
	case faultRouteEdit:
		return soakFault{s.editRoutes, s.revertRoutes}
	case faultBurst:
		return soakFault{s.startBurst, func() error { return nil }}
	}
	s.fails.fatalf(s.t, "no fault %q", f.Kind)
	return soakFault{}
}

// terminate sends SIGTERM to sllbrd in lb n and, while it drains, goes
// on playing kubelet's probes (its /readyz fails from the SIGTERM on) and
// judging the connections, until it exits.
func (s *soakLab) terminate(n int) error {
	p := s.lbs[n].Proc
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-p.Done():
			return nil
		case <-deadline:
			return fmt.Errorf("lb%d: sllbrd still runs 30 s after SIGTERM", n)
		case <-time.After(50 * time.Millisecond):
			s.probeReadiness()
			s.watchStreams()
			s.revertDue()
		}
	}
}

// stopLB ends sllbrd in lb n with stop; its Pod turns not Ready, as
// kubelet marks a pod whose container exited.
func (s *soakLab) stopLB(n int, stop func() error) error {
	if err := stop(); err != nil {
		return err
	}
	if err := s.writeReady(sllbrPod(n), false); err != nil { // the API is down: the probes write it later
		s.t.Logf("%s: kubelet: %v", s.elapsed(), err)
	}
	return nil
}

// restartLB starts sllbrd in lb n again, as kubelet restarts the container
// in the same Pod; kubelet's probes (probeReadiness) mark the Pod Ready
// once its /readyz says so. It does not wait: sllbrd is ready only once BFD
// and BGP are up, which another fault (BIRD's restart) may hold back.
func (s *soakLab) restartLB(n int) error {
	keepLog(s.lbs[n].Proc)
	inst, err := e2e.StartWithArgs(s.lab, lab.LBName(n), sllbrdBinary,
		append([]string{"--kubeconfig", s.dataplane, "--namespace", clusterNS, "--queues", "2"}, s.lbArgs...)...)
	if err != nil {
		return err
	}
	s.t.Cleanup(func() { _ = inst.Proc.Stop() })
	s.lbs[n] = inst
	s.kubelet.fails[sllbrPod(n)] = 0
	return nil
}

// scaleDown deletes lb n's Pod and stops its sllbrd as kubelet does: the
// SLLBR count goes from 3 to 2.
func (s *soakLab) scaleDown(n int) error {
	grace := int64(30)
	if err := s.kube.CoreV1().Pods(clusterNS).Delete(s.ctx, sllbrPod(n), metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		return err
	}
	s.lbPods[n] = false
	if err := s.terminate(n); err != nil {
		return err
	}
	zero := int64(0) // kubelet's final delete
	return s.kube.CoreV1().Pods(clusterNS).Delete(s.ctx, sllbrPod(n), metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

// killLeader SIGKILLs the controller replica that leads.
func (s *soakLab) killLeader() error {
	for _, p := range s.ctls {
		if p.metric("sllbrd_controller_leader") == 1 {
			if err := p.cmd.Process.Kill(); err != nil {
				return err
			}
			<-p.done
			return nil
		}
	}
	return fmt.Errorf("no controller replica leads")
}

// restartControllers starts the replicas that are not running.
func (s *soakLab) restartControllers() error {
	for i, p := range s.ctls {
		select {
		case <-p.done:
			s.startController(i)
		default:
		}
	}
	return nil
}

// startController starts controller replica i (again).
func (s *soakLab) startController(i int) {
	s.ctls[i] = startControllerProc(s.t, s.ctlConfig, clusterNS)
	s.ctl = s.ctls[i]
	s.ctlLogs = append(s.ctlLogs, s.ctls[i].logPath)
}

// restartBIRD starts the gateway's BIRD again with its configuration.
func (s *soakLab) restartBIRD() error {
	ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
	defer cancel()
	b, err := s.lab.StartBIRD(ctx, s.birdCfg)
	if err != nil {
		return err
	}
	s.t.Cleanup(func() { _ = b.Stop() })
	s.bird = b
	return nil
}

// link sets the switch's end of target's net1 up or down: net1 loses its
// carrier, as when a cable or the node's uplink fails, and keeps its
// addresses (setting net1 itself down would flush its IPv6 address, which
// nothing in a pod adds back).
func (s *soakLab) link(target, state string) func() error {
	return func() error {
		port := target + "-" + lab.TargetLink
		out, err := s.lab.Exec(s.ctx, lab.SwitchNode, "ip", "link", "set", "dev", port, state)
		if err != nil {
			return fmt.Errorf("switch: ip link set %s %s: %w: %s", port, state, err, out)
		}
		return nil
	}
}

// deleteTarget deletes target n's Pod and stops its sidecar, as kubelet
// does, and cuts the target's link: the lab's namespace outlives the Pod,
// a cluster's goes with it (and with it the address the probes reach).
func (s *soakLab) deleteTarget(n int) error {
	zero := int64(0)
	if err := s.kube.CoreV1().Pods(clusterNS).Delete(s.ctx, lab.TargetName(n), metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		return err
	}
	err := s.sidecars[n].Stop()
	keepLog(s.sidecars[n])
	delete(s.sidecars, n)
	s.kubelet.ready[lab.TargetName(n)] = false
	return errors.Join(err, s.link(lab.TargetName(n), "down")())
}

// steady reports whether the system is back where it started: the gateway
// routes both VIPs over the three SLLBRs, one controller replica leads,
// every target runs and is Ready with the three as next hops, and every
// SLLBR follows the API server and has applied its last configuration with
// the four targets alive in both families.
func (s *soakLab) steady() (bool, string) {
	if !s.burstDone() {
		return false, "the object writes still run"
	}
	for _, vip := range []netip.Addr{vip4, vip6} {
		if via := s.gatewayVia(vip); !slices.Equal(via, []int{1, 2, 3}) {
			return false, fmt.Sprintf("the gateway routes %v via %v", vip, via)
		}
	}
	leaders := 0
	for _, p := range s.ctls {
		if p.metric("sllbrd_controller_leader") == 1 {
			leaders++
		}
	}
	if leaders != 1 {
		return false, fmt.Sprintf("%d controller replicas lead", leaders)
	}
	if len(s.sidecars) != 4 {
		return false, fmt.Sprintf("targets %v run", s.activeTargets())
	}
	for i := 1; i <= 4; i++ {
		if st := s.statusOf(i); !st.Ready || hopsOf(st) != wantHops(1, 2, 3) {
			return false, fmt.Sprintf("t%d: ready %v, next hops %s", i, st.Ready, hopsOf(st))
		}
	}
	for i := 1; i <= 3; i++ {
		if ok, why := s.lbSteady(i); !ok {
			return false, fmt.Sprintf("lb%d: %s", i, why)
		}
	}
	return true, ""
}

// statusOf is status without failing the test when the API does not answer.
func (s *soakLab) statusOf(i int) targetpod.Status {
	pod, err := s.kube.CoreV1().Pods(clusterNS).Get(s.ctx, lab.TargetName(i), metav1.GetOptions{})
	if err != nil {
		return targetpod.Status{}
	}
	st, _ := targetpod.ParseStatus(pod.Annotations[kube.AnnotationTargetNetworkStatus])
	return st
}

// lbSteady reports whether lb i has applied its configuration and has the
// four targets alive in both families.
func (s *soakLab) lbSteady(i int) (bool, string) {
	socket := s.lbs[i].AdminSocket
	var cfg admin.Config
	if err := adminJSON(socket, &cfg, "show", "config"); err != nil {
		return false, err.Error()
	}
	if !cfg.Ready || cfg.AppliedGeneration != cfg.Generation {
		return false, fmt.Sprintf("ready %v, generation %d applied %d", cfg.Ready, cfg.Generation, cfg.AppliedGeneration)
	}
	if len(cfg.Problems) != 0 { // e.g. its source not yet back in sync with the API server
		return false, fmt.Sprintf("problems %q", cfg.Problems)
	}
	var eps admin.Endpoints
	if err := adminJSON(socket, &eps, "show", "endpoints"); err != nil {
		return false, err.Error()
	}
	alive := 0
	for _, ep := range eps.Endpoints {
		if addrAlive(ep.IPv4) && addrAlive(ep.IPv6) {
			alive++
		}
	}
	if alive != 4 {
		return false, fmt.Sprintf("%d endpoints alive in both families, want 4", alive)
	}
	return true, ""
}

func addrAlive(a *admin.EndpointAddress) bool {
	return a != nil && a.Ready && (a.Liveness == nil || a.Liveness.Alive)
}

// adminJSON sends the request of `sllbrd args... -o json` to socket and
// decodes its result into out. In-process: a CLI built with -race takes
// about a second to start, too long for the soak's polling.
func adminJSON(socket string, out any, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _, err := clientRequest(args[0], args[1:], "")
	if err != nil {
		return fmt.Errorf("sllbrd %s: %w", strings.Join(args, " "), err)
	}
	if err := admin.Call(ctx, socket, req, out); err != nil {
		return fmt.Errorf("sllbrd %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
