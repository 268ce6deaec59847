package onnode

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// appSelector selects the application's pods (deploy/examples/
// target-application.yaml).
var appSelector = map[string]string{"app": appName}

// applyApp applies deploy/examples/target-application.yaml through an
// overlay that makes its application container the lab's responder
// (answering on the VIPs with its pod's name) and its sidecar the image of
// this run; it returns once the Deployment is Available and every pod
// holds the VIPs.
func (e *env) applyApp() {
	start := time.Now()
	overlay := e.appOverlay("app", "target-application.yaml")
	e.t.Logf("kubectl apply -k of the example application with the responder:\n%s", readFile(e.t, overlay))
	e.k("apply", "-k", filepath.Dir(overlay))
	e.waitFor(3*time.Minute, "the application Available", func() (bool, string) { return e.deploymentReady(appName) })
	e.record("application applied: 3 pods Ready", time.Since(start))
	e.waitFor(time.Minute, "every application pod holds the VIPs via both SLLBR pods", func() (bool, string) {
		return e.targetsConfigured(e.pods(appSelector), len(e.pods(sllbrSelector)))
	})
	e.record("application pods hold the VIPs and routes", time.Since(start))
	apps := e.pods(appSelector)
	for _, p := range apps {
		e.checkCaps(p, "sllbrd-target", 1<<12) // NET_ADMIN only (docs/target.md)
		e.checkCaps(p, "application", 0)
	}
	e.checkSidecarToken(apps[0], apps[1])
	e.waitFor(time.Minute, "BIRD routes the VIPs via every SLLBR pod", func() (bool, string) {
		return e.birdSeesAll(e.pods(sllbrSelector))
	})
	e.record("BIRD routes the VIPs via both SLLBR pods", time.Since(start))
}

// targetsConfigured reports whether every pod's agent (its sidecar, or the
// node daemon) says it is ready
// with the Gateway's VIPs and the given number of next hops per family,
// and the VIPs are on the pod's lo.
func (e *env) targetsConfigured(pods []corev1.Pod, hops int) (bool, string) {
	for _, p := range pods {
		s, err := targetpod.ParseStatus(p.Annotations[kube.AnnotationTargetNetworkStatus])
		if err != nil {
			return false, fmt.Sprintf("%s: %v", p.Name, err)
		}
		g := gatewayStatus(s)
		if !s.Ready || g == nil || len(s.Errors)+len(s.Conflicts) > 0 {
			return false, fmt.Sprintf("%s: status %+v", p.Name, s)
		}
		if len(g.NextHops.IPv4) != hops || len(g.NextHops.IPv6) != hops {
			return false, fmt.Sprintf("%s: next hops %v, want %d per family", p.Name, g.NextHops, hops)
		}
		for _, v := range vips {
			if !slices.Contains(g.VIPs, netip.PrefixFrom(v, v.BitLen())) {
				return false, fmt.Sprintf("%s: VIPs %v", p.Name, g.VIPs)
			}
		}
		if p.Status.PodIP == "" {
			return false, p.Name + " has no IP yet"
		}
		if want := agentOf(p); s.Agent != want {
			return false, fmt.Sprintf("%s: applied by %q, want %q", p.Name, s.Agent, want)
		}
		lo, err := e.tryRun("nsenter", "-t", fmt.Sprint(e.containerPID(p, "application")), "-n", "ip", "addr", "show", "dev", "lo")
		if err != nil || !strings.Contains(lo, vip4.String()+"/32") || !strings.Contains(lo, vip6.String()+"/128") {
			return false, fmt.Sprintf("%s: lo has %s %v", p.Name, lo, err)
		}
	}
	return len(pods) > 0, "no pod"
}

func gatewayStatus(s targetpod.Status) *targetpod.GatewayStatus {
	for i := range s.Gateways {
		if s.Gateways[i].Name == gatewayName {
			return &s.Gateways[i]
		}
	}
	return nil
}

// agentOf is the agent that must apply the pod's configuration, as its
// status names it: the sidecar of a pod marked so, else the node daemon.
func agentOf(p corev1.Pod) string {
	if p.Annotations[kube.AnnotationTargetAgent] == kube.TargetAgentSidecar {
		return kube.TargetAgentSidecar
	}
	return nodeAgent
}
