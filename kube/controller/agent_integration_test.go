package controller_test

import (
	"testing"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller/endpoints"
)

// TestIntegrationEndpointReadinessByAgent: a pod of the node daemon (no
// target-agent annotation) is a ready endpoint only while its Ready
// condition is true and the daemon's status annotation says ready; a
// sidecar's pod by its Ready condition alone; a pod of an unknown agent is
// listed, never ready, with a Warning Event saying why. The controller
// runs as deploy/controller's ServiceAccount; the test plays kubelet,
// Multus and the node daemon on Pod objects.
func TestIntegrationEndpointReadinessByAgent(t *testing.T) {
	const agentNS = "sllbrd-ctl-agent"
	e := newEnv(t, agentNS)
	e.createClass()
	e.createGateway(gatewayObject("sllb-a"))
	e.createService("service-agent", "sllb-a", "agent", 0)
	r := e.startController("only")
	e.waitLeading(r)
	net := agentNS + "/" + nadName
	const (
		ready    = `{"version":1,"observedGeneration":1,"ready":true}`
		notReady = `{"version":1,"observedGeneration":2,"ready":false,"errors":["add route: file exists"]}`
	)
	is := func(pod string, want endpoint) func(map[string]endpoint) bool {
		return func(eps map[string]endpoint) bool {
			ep, ok := eps[pod]
			return ok && ep.ready == want.ready && ep.serving == want.serving && ep.terminating == want.terminating
		}
	}

	// The sidecar's pod last: once the slices list it ready, the
	// controller has seen the others Ready too.
	e.createPod(podSpec{name: "daemon", app: "agent", status: networkStatus(net, "169.111.100.62", "fd00:111::62"), ready: true,
		node: "node-1", nodeMode: true})
	e.createPod(podSpec{name: "unknown", app: "agent", status: networkStatus(net, "169.111.100.63"), ready: true, nodeMode: true})
	e.setAnnotation("unknown", kube.AnnotationTargetAgent, "Sidecar")
	e.setAnnotation("unknown", kube.AnnotationTargetNetworkStatus, ready)
	e.createPod(podSpec{name: "sidecar", app: "agent", status: networkStatus(net, "169.111.100.61", "fd00:111::61"), ready: true})

	t.Run("a sidecar's pod: its Ready condition alone; the node daemon's pod not ready without status", func(t *testing.T) {
		eps := e.waitEndpoints("service-agent", "sidecar ready", is("sidecar", endpoint{ready: true, serving: true}))
		if ep, ok := eps["daemon"]; !ok || ep.ready || ep.serving || ep.terminating {
			t.Errorf("the node daemon's pod, Ready, no status yet: %s (listed %v), want listed not ready, not serving", ep, ok)
		}
	})

	t.Run("the node daemon's pod: ready once its status says ready, not ready when it says not ready", func(t *testing.T) {
		id := e.endpoints("service-agent")["daemon"].id
		e.setAnnotation("daemon", kube.AnnotationTargetNetworkStatus, ready)
		e.waitEndpoints("service-agent", "daemon ready once applied", is("daemon", endpoint{ready: true, serving: true}))
		e.setAnnotation("daemon", kube.AnnotationTargetNetworkStatus, notReady)
		e.waitEndpoints("service-agent", "daemon not ready when its status says so", is("daemon", endpoint{}))
		e.setAnnotation("daemon", kube.AnnotationTargetNetworkStatus, ready)
		eps := e.waitEndpoints("service-agent", "daemon ready again", is("daemon", endpoint{ready: true, serving: true}))
		if eps["daemon"].id != id {
			t.Errorf("identifier %d, was %d: a pod keeps its identifier while not ready", eps["daemon"].id, id)
		}
	})

	t.Run("the node daemon's pod being deleted: serving while its status says ready", func(t *testing.T) {
		e.deletePod("daemon", 30) // graceful: the object stays until kubelet confirms
		e.waitEndpoints("service-agent", "daemon terminating, serving", is("daemon", endpoint{serving: true, terminating: true}))
		e.setAnnotation("daemon", kube.AnnotationTargetNetworkStatus, nil)
		e.waitEndpoints("service-agent", "daemon terminating, not serving without status", is("daemon", endpoint{terminating: true}))
	})

	t.Run("an unknown agent: listed not ready, and an Event says why", func(t *testing.T) {
		e.waitEndpoints("service-agent", "unknown listed not ready", is("unknown", endpoint{}))
		note := e.waitEvent("Pod", "unknown", string(endpoints.FaultInvalidTargetAgent), `is "Sidecar"`)
		t.Logf("Event: %s", note)
		e.setAnnotation("unknown", kube.AnnotationTargetAgent, kube.TargetAgentSidecar)
		e.waitEndpoints("service-agent", "unknown ready once marked sidecar", is("unknown", endpoint{ready: true, serving: true}))
	})
}
