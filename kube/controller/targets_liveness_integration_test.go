package controller_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// livenessOf renders the BFD timing of a pod's entry of gateway: "none"
// without one, "-" without the entry.
func livenessOf(d targetpod.Desired, gateway string) string {
	for _, g := range d.Gateways {
		if g.Name == gateway {
			if g.Liveness == nil {
				return "none"
			}
			return fmt.Sprintf("%dms×%d", g.Liveness.IntervalMilliseconds, g.Liveness.Multiplier)
		}
	}
	return "-"
}

// waitBFD waits until the pod's entry of gateway has the BFD timing want
// (livenessOf's form) and returns the pod's configuration.
func (e *env) waitBFD(pod, gateway, want string) targetpod.Desired {
	e.t.Helper()
	var d targetpod.Desired
	e.waitFor(fmt.Sprintf("pod %s: BFD timing of %s %s", pod, gateway, want), func() (bool, string) {
		d, _ = e.network(pod)
		got := livenessOf(d, gateway)
		return got == want, got + " in " + summary(d)
	})
	return d
}

// TestIntegrationTargetBFD: the controller writes a Gateway's BFD timing
// into the target-network annotation of exactly the pods of a Service of
// that Gateway whose endpoint liveness probe is bfd, the strictest of the
// pod's such Services (shorter detection, then shorter interval; a
// fraction of a millisecond rounded up), and takes it away when no such
// Service is left (icmp, off). A Gateway whose entry is kept as it is
// (invalid annotations) keeps its timing too.
func TestIntegrationTargetBFD(t *testing.T) {
	e := newTargetEnv(t) // service-a (app=target) of sllb-a, routed to 20.0.0.1 and 2001:db8::1
	nad := tgtNS + "/" + nadName
	e.createPod(podSpec{name: "t1", app: "target", status: networkStatus(nad, "169.111.100.11", "fd00:111::11"), ready: true})
	e.createPod(podSpec{name: "o1", app: "other", status: networkStatus(nad, "169.111.100.21"), ready: true})
	e.createService("service-o", "sllb-a", "other", 0)
	e.createRoute("vip-o", "sllb-a", "service-o", "20.0.0.3")

	t.Run("icmp, the default: no timing, and no field written", func(t *testing.T) {
		e.waitNetwork("t1", "sllb-a:50000 "+vipsA+" v4=[] v6=[]")
		e.waitNetwork("o1", "sllb-a:50000 vips=[20.0.0.3/32] v4=[] v6=[]")
		for _, p := range []string{"t1", "o1"} {
			if v := e.getPod(p).Annotations[kube.AnnotationTargetNetwork]; strings.Contains(v, "liveness") {
				t.Errorf("pod %s: %s", p, v)
			}
		}
	})

	t.Run("probe=bfd: the Service's pods get its timing, the others not", func(t *testing.T) {
		e.setServiceAnnotation("service-a", kube.AnnotationEndpointLiveness, "interval=100ms,multiplier=3,probe=bfd")
		e.waitBFD("t1", "sllb-a", "100ms×3")
		if v := e.getPod("t1").Annotations[kube.AnnotationTargetNetwork]; !strings.Contains(v, `"liveness":{"intervalMilliseconds":100,"multiplier":3}`) {
			t.Errorf("written as %s", v)
		}
		if d, _ := e.network("o1"); livenessOf(d, "sllb-a") != "none" {
			t.Errorf("o1, of an icmp Service only: %s", livenessOf(d, "sllb-a"))
		}
	})

	t.Run("two Services: the strictest", func(t *testing.T) {
		e.createService("service-b", "sllb-a", "target", 0)
		e.createRoute("vip-b", "sllb-a", "service-b", "20.0.0.2")
		e.setServiceAnnotation("service-b", kube.AnnotationEndpointLiveness, "interval=50ms,multiplier=4,probe=bfd")
		e.waitBFD("t1", "sllb-a", "50ms×4") // 200ms before 300ms
		e.setServiceAnnotation("service-b", kube.AnnotationEndpointLiveness, "interval=150ms,multiplier=2,probe=bfd")
		e.waitBFD("t1", "sllb-a", "100ms×3") // 300ms both: the shorter interval
		e.setServiceAnnotation("service-b", kube.AnnotationEndpointLiveness, "interval=10500us,multiplier=2,probe=bfd")
		e.waitBFD("t1", "sllb-a", "11ms×2") // rounded up to whole milliseconds
		e.setServiceAnnotation("service-b", kube.AnnotationEndpointLiveness, "interval=10500us,multiplier=2,probe=icmp")
		e.waitBFD("t1", "sllb-a", "100ms×3") // an icmp Service counts for nothing
	})

	t.Run("per Gateway; an entry kept as it is keeps its timing", func(t *testing.T) {
		e.setGatewayAnnotation("sllb-a", kube.AnnotationNetworkSubnets, "not json")
		e.waitFor("sllb-a not accepted", func() (bool, string) {
			c := conditionOf(e.gateway("sllb-a").Status.Conditions, "Accepted")
			return strings.HasPrefix(c, "False/InvalidAnnotations"), c
		})
		// Recomputed, sllb-a's entry would lose the timing.
		e.setServiceAnnotation("service-a", kube.AnnotationEndpointLiveness, "probe=icmp")
		e.setServiceAnnotation("service-b", kube.AnnotationEndpointLiveness, "probe=bfd")
		// A second Gateway's Service of the pod, created after those
		// changes (one watch of Services: once the controller has it, it
		// has them too).
		e.createGateway(gatewayObject("sllb-b"))
		e.createService("service-g2", "sllb-b", "target", 0)
		e.setServiceAnnotation("service-g2", kube.AnnotationEndpointLiveness, "interval=300ms,multiplier=2,probe=bfd")
		e.createRoute("vip-g2", "sllb-b", "service-g2", "30.0.0.1")
		d := e.waitBFD("t1", "sllb-b", "300ms×2")
		if got := livenessOf(d, "sllb-a"); got != "100ms×3" {
			t.Errorf("kept entry of sllb-a: %s, want 100ms×3 as before", got)
		}
		e.setGatewayAnnotation("sllb-a", kube.AnnotationNetworkSubnets, `["169.111.100.0/24","fd00:111::/64"]`)
		d = e.waitBFD("t1", "sllb-a", "200ms×4") // service-b's defaults
		if got := livenessOf(d, "sllb-b"); got != "300ms×2" {
			t.Errorf("sllb-b: %s, want 300ms×2", got)
		}
	})

	t.Run("no Service with probe bfd left: the timing goes", func(t *testing.T) {
		e.setServiceAnnotation("service-b", kube.AnnotationEndpointLiveness, "off")
		d := e.waitBFD("t1", "sllb-a", "none")
		if len(d.Gateways[0].VIPs) != 3 {
			t.Errorf("VIPs %v, want service-a's and service-b's", d.Gateways[0].VIPs)
		}
		e.setServiceAnnotation("service-g2", kube.AnnotationEndpointLiveness, "probe=icmp")
		e.waitBFD("t1", "sllb-b", "none")
		if v := e.getPod("t1").Annotations[kube.AnnotationTargetNetwork]; strings.Contains(v, "liveness") {
			t.Errorf("written as %s", v)
		}
	})
}
