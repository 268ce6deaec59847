package controller_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/controller"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// createSelectingService creates a headless Service of gateway selecting
// the labels.
func (e *env) createSelectingService(name, gateway string, selector map[string]string) {
	e.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelServiceProxyName: gateway}},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: selector},
	}
	if _, err := e.kube.CoreV1().Services(e.ns).Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create Service %s: %v", name, err)
	}
}

// createLabelledPod creates a running, ready pod with the labels and an
// address on the lab's network.
func (e *env) createLabelledPod(name string, lbls map[string]string, addr string) {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls,
			Annotations: map[string]string{kube.AnnotationNetworkStatus: networkStatus(e.ns+"/"+nadName, addr),
				kube.AnnotationTargetAgent: kube.TargetAgentSidecar}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.org/app:1"}}},
	}
	got, err := e.kube.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Pod %s: %v", name, err)
	}
	e.setPodReady(got, true)
}

// routeTargets returns the TargetsConfigured condition of the route's
// entry for gateway as "Status/Reason" and its message.
func (e *env) routeTargets(route, gateway string) (string, string) {
	e.t.Helper()
	var r v1alpha1.L34Route
	e.getCustom(l34RouteGVR, route, &r)
	for _, p := range r.Status.Parents {
		if string(p.ParentRef.Name) == gateway && p.ControllerName == kube.ControllerName {
			for _, c := range p.Conditions {
				if c.Type == "TargetsConfigured" {
					return string(c.Status) + "/" + c.Reason, c.Message
				}
			}
		}
	}
	return "", ""
}

// waitGatewayTargets waits until the Gateway's TargetsConfigured condition
// is want ("Status/Reason") and its message contains each of parts.
func (e *env) waitGatewayTargets(gateway, want string, parts ...string) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("Gateway %s TargetsConfigured %s saying %q", gateway, want, parts), func() (bool, string) {
		for _, c := range e.gateway(gateway).Status.Conditions {
			if c.Type != "TargetsConfigured" {
				continue
			}
			got := string(c.Status) + "/" + c.Reason
			for _, p := range parts {
				if !strings.Contains(c.Message, p) {
					return false, got + ": " + c.Message
				}
			}
			return got == want, got + ": " + c.Message
		}
		return false, "no TargetsConfigured condition"
	})
}

// waitRouteTargets waits until the route's TargetsConfigured condition
// is want and its message contains each of parts; it returns the message.
func (e *env) waitRouteTargets(route, gateway, want string, parts ...string) string {
	e.t.Helper()
	var msg string
	e.waitFor(fmt.Sprintf("L34Route %s TargetsConfigured %s saying %q", route, want, parts), func() (bool, string) {
		var got string
		got, msg = e.routeTargets(route, gateway)
		for _, p := range parts {
			if !strings.Contains(msg, p) {
				return false, got + ": " + msg
			}
		}
		return got == want, got + ": " + msg
	})
	return msg
}

// watchAnnotations records every value of the pods' desired network
// annotation that a watch delivers, until the test ends.
func (e *env) watchAnnotations(pods ...string) func() map[string][]string {
	e.t.Helper()
	var mu sync.Mutex
	seen := map[string][]string{}
	for _, name := range pods {
		w := e.watchPods(name)
		go func() {
			for ev := range w.ResultChan() {
				if p, ok := ev.Object.(*corev1.Pod); ok {
					if v, set := p.Annotations[kube.AnnotationTargetNetwork]; set {
						mu.Lock()
						if vs := seen[name]; len(vs) == 0 || vs[len(vs)-1] != v {
							seen[name] = append(vs, v)
						}
						mu.Unlock()
					}
				}
			}
		}()
	}
	return func() map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]string{}
		for k, v := range seen {
			out[k] = append([]string(nil), v...)
		}
		return out
	}
}

// TestIntegrationTargetNetworkLeavesOutWhatTheTargetRefuses: two Gateways
// whose routes put the same VIP on a pod, and a Gateway with more VIPs
// than a target takes. The controller writes every Gateway's part that
// the target accepts, leaves out the rest, and says which object
// conflicts with which on the L34Routes (TargetsConfigured) and the pod
// (an Event); no annotation value it ever writes fails the target's check.
func TestIntegrationTargetNetworkLeavesOutWhatTheTargetRefuses(t *testing.T) {
	e := newEnv(t, "sllbrd-ctl-leftout")
	e.createClass()
	e.createGateway(gatewayObject("sllb-a"))
	e.createGateway(gatewayObject("sllb-b"))
	e.createSelectingService("service-a", "sllb-a", map[string]string{"app": "target"})
	e.createSelectingService("service-b", "sllb-b", map[string]string{"tier": "front"})
	// t1 is a target of both Gateways, t3 of sllb-b only.
	e.createLabelledPod("t1", map[string]string{"app": "target", "tier": "front"}, "169.111.100.11")
	e.createLabelledPod("t3", map[string]string{"tier": "front"}, "169.111.100.13")
	values := e.watchAnnotations("t1", "t3")
	e.createRoute("a", "sllb-a", "service-a", "20.0.0.1", "2001:db8::1")
	r := e.startController("only")
	e.waitLeading(r)
	e.waitNetwork("t1", "sllb-a:50000 vips=[20.0.0.1/32 2001:db8::1/128] v4=[] v6=[]")
	e.waitRouteTargets("a", "sllb-a", "True/TargetsConfigured")

	t.Run("the same VIP from two Gateways: the older route keeps it, the other Gateway's other VIPs are written", func(t *testing.T) {
		e.createRoute("b", "sllb-b", "service-b", "20.0.0.1", "30.0.0.1")
		e.waitNetwork("t1", "sllb-a:50000 vips=[20.0.0.1/32 2001:db8::1/128] v4=[] v6=[] | sllb-b:50001 vips=[30.0.0.1/32] v4=[] v6=[]")
		e.waitNetwork("t3", "sllb-b:50000 vips=[20.0.0.1/32 30.0.0.1/32] v4=[] v6=[]") // no conflict on t3
		msg := e.waitRouteTargets("b", "sllb-b", "False/VIPConflict",
			"on pod t1: VIP 20.0.0.1/32 of L34Route b (Gateway sllb-b) left out: L34Route a (Gateway sllb-a) puts it on the pod too")
		if strings.Contains(msg, "t3") {
			t.Errorf("the condition names t3, which holds all of b's VIPs: %s", msg)
		}
		e.waitRouteTargets("a", "sllb-a", "True/TargetsConfigured")
		// The Gateways say it too: sllb-b names its route left out,
		// sllb-a has nothing left out.
		e.waitGatewayTargets("sllb-b", "False/VIPConflict", "L34Route "+e.ns+"/b: on pod t1: VIP 20.0.0.1/32 of L34Route b (Gateway sllb-b) left out")
		e.waitGatewayTargets("sllb-a", "True/TargetsConfigured")
		e.waitEvent("Pod", "t1", controller.ReasonTargetNetworkPartial, "L34Route a (Gateway sllb-a) puts it on the pod too")
		// The route is accepted all the same: the SLLBR pods of sllb-b
		// serve it, and t3 holds its VIPs.
		e.waitRouteParents("b", "sllb-b meridio-experiment/stateless-load-balancer True/Accepted@1 True/ResolvedRefs@1")
	})

	t.Run("the conflict ends with the older route: the VIP goes to the other Gateway", func(t *testing.T) {
		if err := e.dyn.Dynamic.Resource(l34RouteGVR).Namespace(e.ns).Delete(e.ctx, "a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitNetwork("t1", "sllb-b:50001 vips=[20.0.0.1/32 30.0.0.1/32] v4=[] v6=[]")
		e.waitRouteTargets("b", "sllb-b", "True/TargetsConfigured")
		e.waitGatewayTargets("sllb-b", "True/TargetsConfigured")
	})

	t.Run("a new route cannot take a VIP away; leaving a Service ends the conflict", func(t *testing.T) {
		// Now younger than b: creation times have whole seconds, and a
		// tie goes to the lower name.
		time.Sleep(1100 * time.Millisecond)
		e.createRoute("a", "sllb-a", "service-a", "20.0.0.1", "2001:db8::1")
		e.waitNetwork("t1", "sllb-a:50000 vips=[2001:db8::1/128] v4=[] v6=[] | sllb-b:50001 vips=[20.0.0.1/32 30.0.0.1/32] v4=[] v6=[]")
		e.waitRouteTargets("a", "sllb-a", "False/VIPConflict",
			"on pod t1: VIP 20.0.0.1/32 of L34Route a (Gateway sllb-a) left out: L34Route b (Gateway sllb-b) puts it on the pod too")
		// t1 leaves service-b: nothing else changes for route a, whose
		// condition is corrected all the same.
		patch := []byte(`{"metadata":{"labels":{"tier":null}}}`)
		if _, err := e.kube.CoreV1().Pods(e.ns).Patch(e.ctx, "t1", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitNetwork("t1", "sllb-a:50000 vips=[20.0.0.1/32 2001:db8::1/128] v4=[] v6=[]")
		e.waitRouteTargets("a", "sllb-a", "True/TargetsConfigured")
	})

	t.Run("VIPs past a target's limit: the youngest route is left out, the others stay", func(t *testing.T) {
		// 11 routes of 100 VIPs each, on top of a's 2: the eleventh would
		// make 1102 VIPs of sllb-a on t1.
		for i := range 11 {
			var vips []string
			for j := range 100 {
				vips = append(vips, fmt.Sprintf("21.%d.%d.%d", i, j/250, 1+j%250))
			}
			e.createRoute(fmt.Sprintf("many-%02d", i), "sllb-a", "service-a", vips...)
		}
		e.waitFor("t1 with 1002 VIPs of sllb-a", func() (bool, string) {
			d, _ := e.network("t1")
			if len(d.Gateways) != 1 {
				return false, summary(d)
			}
			return len(d.Gateways[0].VIPs) == 1002, fmt.Sprintf("%d VIPs", len(d.Gateways[0].VIPs))
		})
		e.waitRouteTargets("many-10", "sllb-a", "False/TargetLimit",
			"on pod t1: VIPs 21.10.0.1/32", "of L34Route many-10 (Gateway sllb-a) left out: it would make 1102 VIPs of Gateway sllb-a on the pod; a target takes at most 1024")
		e.waitRouteTargets("many-09", "sllb-a", "True/TargetsConfigured")
		e.waitRouteTargets("a", "sllb-a", "True/TargetsConfigured")
	})

	// Every value written is one the target takes.
	got := values()
	for pod, vs := range got {
		for _, v := range vs {
			if _, err := targetpod.ParseDesired(v); err != nil {
				t.Errorf("pod %s: annotation %s\nfails the target's check: %v", pod, v, err)
			}
		}
	}
	if len(got["t1"]) < 5 || len(got["t3"]) < 1 {
		t.Errorf("watched %d values on t1 and %d on t3", len(got["t1"]), len(got["t3"]))
	}
	t.Logf("checked %d values of t1 and %d of t3", len(got["t1"]), len(got["t3"]))
}
