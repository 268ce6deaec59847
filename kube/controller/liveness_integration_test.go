package controller_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/controller"
)

// setServiceAnnotation sets one annotation of a Service with a merge patch.
func (e *env) setServiceAnnotation(name, key, value string) {
	e.t.Helper()
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.kube.CoreV1().Services(e.ns).Patch(e.ctx, name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("patch Service %s: %v", name, err)
	}
}

// resolvedRefsMessage is the message of a route's ResolvedRefs condition
// for its only parent, "" without one.
func (e *env) resolvedRefsMessage(route string) string {
	e.t.Helper()
	var r v1alpha1.L34Route
	e.getCustom(l34RouteGVR, route, &r)
	if len(r.Status.Parents) != 1 {
		return ""
	}
	return messageOf(r.Status.Parents[0].Conditions, "ResolvedRefs")
}

// TestIntegrationInvalidLiveness: a Service whose endpoint-liveness
// annotation is invalid is reported where the user looks, the same way as
// the SLLBRs treat it (left out, with its routes): its L34Route says
// ResolvedRefs=False naming the annotation and the key's range, the Service
// gets an InvalidService Event, the route's VIP is not among the Gateway's
// addresses; its EndpointSlices are written all the same. Fixed, the route
// resolves and the VIP is served; broken again (an unknown probe, then a
// multiplier out of range), a new Event says so each time.
func TestIntegrationInvalidLiveness(t *testing.T) {
	e := newEnv(t, "sllbrd-ctl-liveness")
	e.createClass()
	e.createGateway(gatewayObject("sllb-a"))
	e.createService("service-l", "sllb-a", "l", 0)
	e.setServiceAnnotation("service-l", kube.AnnotationEndpointLiveness, "interval=5ms")
	e.createRoute("r-l", "sllb-a", "service-l", "20.0.0.5")
	e.createPod(podSpec{name: "l1", app: "l", ready: true,
		status: networkStatus("sllbrd-ctl-liveness/"+nadName, "169.111.100.1", "fd00:111::1")})
	r := e.startController("only")
	e.waitLeading(r)

	const parent = "sllb-a " + kube.ControllerName + " True/Accepted@1"
	e.waitRouteParents("r-l", parent+" False/BackendNotFound@1")
	msg := e.resolvedRefsMessage("r-l")
	for _, part := range []string{"service-l", kube.AnnotationEndpointLiveness, "interval: 5ms is outside 10ms..10s"} {
		if !strings.Contains(msg, part) {
			t.Errorf("ResolvedRefs message %q does not say %q", msg, part)
		}
	}
	e.waitEvent("Service", "service-l", controller.ReasonInvalidService,
		"annotation "+kube.AnnotationEndpointLiveness+`: "interval=5ms": interval: 5ms is outside 10ms..10s`)
	want := map[string]int{"l1": 0}
	e.waitEndpoints("service-l", fmt.Sprint("slices written: ", want), func(eps map[string]endpoint) bool { return maps.Equal(ids(eps), want) })
	gw := e.waitGateway("sllb-a", "True/Accepted@1", "False/NoReadyReplicas@1")
	if got := addressValues(gw); slices.Contains(got, "20.0.0.5") {
		t.Errorf("Gateway addresses %v include the VIP of a route to an invalid Service", got)
	}

	e.setServiceAnnotation("service-l", kube.AnnotationEndpointLiveness, "interval=100ms,multiplier=3")
	e.waitRouteParents("r-l", parent+" True/ResolvedRefs@1")
	e.waitFor("20.0.0.5 in the addresses", func() (bool, string) {
		got := addressValues(e.gateway("sllb-a"))
		return slices.Contains(got, "20.0.0.5"), fmt.Sprint(got)
	})

	// An unknown probe is refused like any other invalid value, naming
	// the key and what it accepts.
	e.setServiceAnnotation("service-l", kube.AnnotationEndpointLiveness, "interval=100ms,probe=tcp")
	e.waitRouteParents("r-l", parent+" False/BackendNotFound@1")
	msg = e.resolvedRefsMessage("r-l")
	for _, part := range []string{"service-l", kube.AnnotationEndpointLiveness, `probe: "tcp" is neither icmp nor bfd`} {
		if !strings.Contains(msg, part) {
			t.Errorf("ResolvedRefs message %q does not say %q", msg, part)
		}
	}
	e.waitEvent("Service", "service-l", controller.ReasonInvalidService,
		"annotation "+kube.AnnotationEndpointLiveness+`: "interval=100ms,probe=tcp": probe: "tcp" is neither icmp nor bfd`)

	e.setServiceAnnotation("service-l", kube.AnnotationEndpointLiveness, "interval=100ms,multiplier=3,probe=bfd")
	e.waitRouteParents("r-l", parent+" True/ResolvedRefs@1")

	e.setServiceAnnotation("service-l", kube.AnnotationEndpointLiveness, "interval=1s,multiplier=0")
	e.waitRouteParents("r-l", parent+" False/BackendNotFound@1")
	e.waitEvent("Service", "service-l", controller.ReasonInvalidService, `multiplier: "0" is not an integer in 1..50`)
}
