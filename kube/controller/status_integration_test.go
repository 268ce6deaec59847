package controller_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
)

var (
	l34RouteGVR      = v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.ResourceL34Routes)
	gatewayRouterGVR = v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.ResourceGatewayRouters)
)

// conditionOf summarises the condition typ of conds as
// "Status/Reason@observedGeneration", "" when absent.
func conditionOf(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return fmt.Sprintf("%s/%s@%d", c.Status, c.Reason, c.ObservedGeneration)
		}
	}
	return ""
}

func messageOf(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

func (e *env) gateway(name string) *gatewayv1.Gateway {
	e.t.Helper()
	gw, err := e.gw.GatewayV1().Gateways(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get Gateway %s: %v", name, err)
	}
	return gw
}

// patchGateway patches a Gateway. Tests change Gateways with patches, never
// with a read and an update: the controller writes their status at any
// time, and an update from an older read would fail with a conflict.
func (e *env) patchGateway(name string, pt types.PatchType, patch []byte) {
	e.t.Helper()
	if _, err := e.gw.GatewayV1().Gateways(e.ns).Patch(e.ctx, name, pt, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("patch Gateway %s with %s: %v", name, patch, err)
	}
}

// mergePatchGateway applies patch as a JSON merge patch.
func (e *env) mergePatchGateway(name string, patch map[string]any) {
	e.t.Helper()
	b, err := json.Marshal(patch)
	if err != nil {
		e.t.Fatal(err)
	}
	e.patchGateway(name, types.MergePatchType, b)
}

// setGatewayAnnotation sets one of spec.infrastructure.annotations.
func (e *env) setGatewayAnnotation(name, key, value string) {
	e.t.Helper()
	e.mergePatchGateway(name, map[string]any{"spec": map[string]any{"infrastructure": map[string]any{"annotations": map[string]string{key: value}}}})
}

// addressValues are the values of a Gateway's status addresses.
func addressValues(gw *gatewayv1.Gateway) []string {
	var out []string
	for _, a := range gw.Status.Addresses {
		out = append(out, a.Value)
	}
	return out
}

// waitGateway waits until the Gateway's Accepted and Programmed conditions
// read accepted and programmed (see conditionOf) and returns it.
func (e *env) waitGateway(name, accepted, programmed string) *gatewayv1.Gateway {
	e.t.Helper()
	var gw *gatewayv1.Gateway
	e.waitFor(fmt.Sprintf("Gateway %s Accepted %s Programmed %s", name, accepted, programmed), func() (bool, string) {
		gw = e.gateway(name)
		a, p := conditionOf(gw.Status.Conditions, "Accepted"), conditionOf(gw.Status.Conditions, "Programmed")
		return a == accepted && p == programmed, a + " " + p + ": " + messageOf(gw.Status.Conditions, "Accepted") + " / " + messageOf(gw.Status.Conditions, "Programmed")
	})
	return gw
}

// createRoute creates an L34Route of parent to backend with the VIPs.
func (e *env) createRoute(name, parent, backend string, vips ...string) {
	e.t.Helper()
	var cidrs []string
	for _, v := range vips {
		if strings.Contains(v, ":") {
			cidrs = append(cidrs, v+"/128")
		} else {
			cidrs = append(cidrs, v+"/32")
		}
	}
	r := &v1alpha1.L34Route{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "L34Route"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1alpha1.L34RouteSpec{
			ParentRefs:  []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(parent)}},
			BackendRefs: []gatewayv1.BackendRef{{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(backend), Port: ptrTo(gatewayv1.PortNumber(1))}}},
			Priority:    10, Protocols: []v1alpha1.Protocol{v1alpha1.ProtocolTCP},
		},
	}
	for _, c := range cidrs {
		r.Spec.DestinationCIDRs = append(r.Spec.DestinationCIDRs, v1alpha1.CIDR(c))
	}
	e.createCustom(l34RouteGVR, r)
}

func (e *env) createCustom(gvr schema.GroupVersionResource, obj runtime.Object) {
	e.t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		e.t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	if _, err := e.dyn.Dynamic.Resource(gvr).Namespace(e.ns).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create %s %s: %v", gvr.Resource, u.GetName(), err)
	}
}

// getCustom reads a custom resource into out.
func (e *env) getCustom(gvr schema.GroupVersionResource, name string, out runtime.Object) {
	e.t.Helper()
	u, err := e.dyn.Dynamic.Resource(gvr).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get %s %s: %v", gvr.Resource, name, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		e.t.Fatal(err)
	}
}

// routeParents summarises a route's status entries as
// "gateway controller Accepted ResolvedRefs".
func (e *env) routeParents(name string) []string {
	e.t.Helper()
	var r v1alpha1.L34Route
	e.getCustom(l34RouteGVR, name, &r)
	var out []string
	for _, p := range r.Status.Parents {
		out = append(out, fmt.Sprintf("%s %s %s %s", p.ParentRef.Name, p.ControllerName,
			conditionOf(p.Conditions, "Accepted"), conditionOf(p.Conditions, "ResolvedRefs")))
	}
	return out
}

func (e *env) waitRouteParents(name string, want ...string) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("L34Route %s parents %v", name, want), func() (bool, string) {
		got := e.routeParents(name)
		return slices.Equal(got, want), fmt.Sprint(got)
	})
}

func ptrTo[T any](v T) *T { return &v }

// setReadyReplicas writes the SLLBR Deployment's status as the Deployment
// controller would.
func (e *env) setReadyReplicas(gateway string, ready int32) {
	e.t.Helper()
	e.waitFor("the SLLBR Deployment of "+gateway, func() (bool, string) {
		ds, err := e.kube.AppsV1().Deployments(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sllbr.Selector(gateway)).String()})
		if err != nil || len(ds.Items) != 1 {
			return false, fmt.Sprint(err)
		}
		d := ds.Items[0]
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas,
			ReadyReplicas: ready, AvailableReplicas: ready, UpdatedReplicas: *d.Spec.Replicas}
		_, err = e.kube.AppsV1().Deployments(e.ns).UpdateStatus(e.ctx, &d, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// TestIntegrationStatus checks the status the controller writes on
// GatewayClasses, Gateways, L34Routes and GatewayRouters, and what it
// leaves alone.
func TestIntegrationStatus(t *testing.T) {
	e := newEnv(t, "sllbrd-ctl-status")
	e.createClass()
	other := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.org/other"}}
	if _, err := e.gw.GatewayV1().GatewayClasses().Create(e.ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createGateway(gatewayObject("sllb-a"))
	seed := gatewayObject("seed-form")
	seed.Spec.GatewayClassName = kube.ControllerName // the seed writes the controllerName as class
	e.createGateway(seed)
	unknown := gatewayObject("unknown-class")
	unknown.Spec.GatewayClassName = "no-such-class"
	e.createGateway(unknown)
	foreign := gatewayObject("foreign")
	foreign.Spec.GatewayClassName = "other"
	e.createGateway(foreign)
	bad := gatewayObject("bad-annotations")
	bad.Spec.Infrastructure.Annotations[kube.AnnotationNetworkSubnets] = `["169.111.100.0/24", "not-a-cidr"]`
	e.createGateway(bad)
	e.createService("service-a", "sllb-a", "a", 0)
	e.createRoute("r-two", "sllb-a", "service-a", "20.0.0.2", "2001:db8::1")
	e.createRoute("r-one", "sllb-a", "service-a", "20.0.0.1")
	e.createRoute("r-missing", "sllb-a", "nope", "20.0.0.9")
	e.createRoute("r-foreign", "foreign", "service-a", "20.0.0.8")
	e.createCustom(gatewayRouterGVR, &v1alpha1.GatewayRouter{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "GatewayRouter"},
		ObjectMeta: metav1.ObjectMeta{Name: "gw-v4", Labels: map[string]string{kube.LabelServiceProxyName: "sllb-a"}},
		Spec:       v1alpha1.GatewayRouterSpec{Address: "169.254.100.150", Interface: "vlan-100", Static: &v1alpha1.StaticSpec{}},
	})
	e.createCustom(gatewayRouterGVR, &v1alpha1.GatewayRouter{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "GatewayRouter"},
		ObjectMeta: metav1.ObjectMeta{Name: "gw-foreign", Labels: map[string]string{kube.LabelServiceProxyName: "foreign"}},
		Spec:       v1alpha1.GatewayRouterSpec{Address: "169.254.100.151", Interface: "vlan-100", Static: &v1alpha1.StaticSpec{}},
	})
	r := e.startController("only")
	e.waitLeading(r)

	t.Run("GatewayClass", func(t *testing.T) {
		e.waitFor("our class accepted", func() (bool, string) {
			c, _ := e.gw.GatewayV1().GatewayClasses().Get(e.ctx, className, metav1.GetOptions{})
			got := conditionOf(c.Status.Conditions, "Accepted")
			return got == "True/Accepted@1", got
		})
		c, _ := e.gw.GatewayV1().GatewayClasses().Get(e.ctx, "other", metav1.GetOptions{})
		if got := conditionOf(c.Status.Conditions, "Accepted"); got != "Unknown/Pending@0" {
			t.Errorf("another controller's class: Accepted %s", got)
		}
	})

	t.Run("Gateways", func(t *testing.T) {
		gw := e.waitGateway("sllb-a", "True/Accepted@1", "False/NoReadyReplicas@1")
		var addrs []string
		for _, a := range gw.Status.Addresses {
			addrs = append(addrs, string(*a.Type)+" "+a.Value)
		}
		if want := []string{"IPAddress 20.0.0.1", "IPAddress 20.0.0.2", "IPAddress 2001:db8::1"}; !slices.Equal(addrs, want) {
			t.Errorf("addresses %v, want %v (r-missing's VIP is not accepted)", addrs, want)
		}
		e.setReadyReplicas("sllb-a", 1)
		gw = e.waitGateway("sllb-a", "True/Accepted@1", "True/Programmed@1")
		if msg := messageOf(gw.Status.Conditions, "Programmed"); msg != "1 of 2 SLLBR replicas ready" {
			t.Errorf("Programmed message %q", msg)
		}
		e.waitGateway("seed-form", "True/Accepted@1", "False/NoReadyReplicas@1")
		gw = e.waitGateway("unknown-class", "False/UnknownGatewayClass@1", "False/Pending@1")
		if msg := messageOf(gw.Status.Conditions, "Accepted"); !strings.Contains(msg, `GatewayClass "no-such-class" does not exist`) {
			t.Errorf("unknown class message %q", msg)
		}
		gw = e.waitGateway("bad-annotations", "False/InvalidAnnotations@1", "False/Pending@1")
		if msg := messageOf(gw.Status.Conditions, "Accepted"); !strings.Contains(msg, "meridio-experiment/network-subnets][1]") {
			t.Errorf("invalid annotations message %q", msg)
		}
		if gw := e.gateway("foreign"); conditionOf(gw.Status.Conditions, "Accepted") != "Unknown/Pending@0" {
			t.Errorf("another controller's Gateway got status %+v", gw.Status.Conditions)
		}
		// A new generation is observed. (A patch: the controller may be
		// writing sllb-a's status meanwhile.)
		e.patchGateway("sllb-a", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/listeners/0/port","value":4000},{"op":"replace","path":"/spec/listeners/0/port","value":4001}]`))
		e.waitGateway("sllb-a", "True/Accepted@2", "True/Programmed@2")
	})

	t.Run("L34Routes", func(t *testing.T) {
		e.waitRouteParents("r-two", "sllb-a meridio-experiment/stateless-load-balancer True/Accepted@1 True/ResolvedRefs@1")
		e.waitRouteParents("r-missing", "sllb-a meridio-experiment/stateless-load-balancer True/Accepted@1 False/BackendNotFound@1")
		if got := e.routeParents("r-foreign"); len(got) != 0 {
			t.Errorf("a route of another controller's Gateway got %v", got)
		}
		// The Service appears: the route resolves and its VIP is served.
		e.createService("nope", "sllb-a", "n", 0)
		e.waitRouteParents("r-missing", "sllb-a meridio-experiment/stateless-load-balancer True/Accepted@1 True/ResolvedRefs@1")
		e.waitFor("20.0.0.9 in the addresses", func() (bool, string) {
			got := addressValues(e.gateway("sllb-a"))
			return slices.Contains(got, "20.0.0.9"), fmt.Sprint(got)
		})
		// A route moved to another Gateway loses our entry and its VIP. A
		// patch, not a read and an update: nothing waited for the
		// controller's write of r-one's status, which may come meanwhile.
		patch := []byte(`{"spec":{"parentRefs":[{"name":"foreign"}]}}`)
		if _, err := e.dyn.Dynamic.Resource(l34RouteGVR).Namespace(e.ns).Patch(e.ctx, "r-one", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitRouteParents("r-one")
		e.waitFor("20.0.0.1 gone from the addresses", func() (bool, string) {
			got := addressValues(e.gateway("sllb-a"))
			return !slices.Contains(got, "20.0.0.1"), fmt.Sprint(got)
		})
	})

	t.Run("GatewayRouters", func(t *testing.T) {
		e.waitFor("gw-v4 accepted", func() (bool, string) {
			var r v1alpha1.GatewayRouter
			e.getCustom(gatewayRouterGVR, "gw-v4", &r)
			got := conditionOf(r.Status.Conditions, "Accepted")
			return got == "True/Accepted@1", got
		})
		var r v1alpha1.GatewayRouter
		e.getCustom(gatewayRouterGVR, "gw-foreign", &r)
		if len(r.Status.Conditions) != 0 {
			t.Errorf("another controller's router got %+v", r.Status.Conditions)
		}
	})
}
