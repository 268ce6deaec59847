package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

const tgtNS = "sllbrd-ctl-tgt"

// createSLLBRPod creates a pod as the SLLBR Deployment's would be: a pod
// of a ReplicaSet of the Deployment the controller created for the Gateway
// (sllbrReplicaSet), its address on the Gateway's network, Ready as asked.
func (e *env) createSLLBRPod(name, gateway string, ready bool, ips ...string) {
	e.t.Helper()
	rs := e.sllbrReplicaSet(gateway)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*controlledBy("ReplicaSet", rs.Name, rs.UID)},
			Annotations:     map[string]string{kube.AnnotationNetworkStatus: networkStatus(tgtNS+"/"+nadName, ips...)}},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: rs.Spec.Template.Spec.ServiceAccountName,
			Containers: []corev1.Container{{Name: "sllbrd", Image: "example.org/sllbrd:1"}}},
	}
	got, err := e.kube.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Pod %s: %v", name, err)
	}
	e.setPodReady(got, ready)
}

// network returns a pod's desired network annotation, parsed (zero
// Desired when absent).
func (e *env) network(pod string) (targetpod.Desired, bool) {
	e.t.Helper()
	v, ok := e.getPod(pod).Annotations[kube.AnnotationTargetNetwork]
	if !ok {
		return targetpod.Desired{}, false
	}
	d, err := targetpod.ParseDesired(v)
	if err != nil {
		e.t.Fatalf("pod %s: annotation %s: %v", pod, v, err)
	}
	return d, true
}

// summary renders a Desired as "gateway:table vips=... v4=... v6=..." per
// Gateway, without the generation.
func summary(d targetpod.Desired) string {
	var parts []string
	for _, g := range d.Gateways {
		parts = append(parts, fmt.Sprintf("%s:%d vips=%v v4=%v v6=%v", g.Name, g.Table, g.VIPs, g.NextHops.IPv4, g.NextHops.IPv6))
	}
	return strings.Join(parts, " | ")
}

// waitNetwork waits until pod's annotation summarises as want ("" for no
// annotation) and returns it.
func (e *env) waitNetwork(pod, want string) targetpod.Desired {
	e.t.Helper()
	var d targetpod.Desired
	e.waitFor(fmt.Sprintf("pod %s network %q", pod, want), func() (bool, string) {
		var ok bool
		d, ok = e.network(pod)
		got := summary(d)
		if !ok {
			got = ""
		}
		return got == want, got
	})
	return d
}

const (
	hops12 = "v4=[169.111.100.1 169.111.100.2] v6=[fd00:111::1 fd00:111::2]"
	vipsA  = "vips=[20.0.0.1/32 2001:db8::1/128]"
	// noHops is both Gateways' entry once no SLLBR pod is ready.
	noHops = "sllb-a:50000 " + vipsA + " v4=[] v6=[] | sllb-b:50001 vips=[30.0.0.1/32] v4=[] v6=[]"
)

// TestIntegrationTargetNetwork runs the controller as deploy/controller's
// ServiceAccount (whose only pod write is this patch) and checks the
// desired network configuration it writes on the target pods.
func TestIntegrationTargetNetwork(t *testing.T) {
	e := newTargetEnv(t)
	e.createSLLBRPod("sllbr-1", "sllb-a", true, "169.111.100.1", "fd00:111::1")
	e.createSLLBRPod("sllbr-2", "sllb-a", true, "169.111.100.2", "fd00:111::2")
	e.createSLLBRPod("sllbr-3", "sllb-a", false, "169.111.100.3", "fd00:111::3")
	nad := tgtNS + "/" + nadName
	e.createPod(podSpec{name: "t1", app: "target", status: networkStatus(nad, "169.111.100.11", "fd00:111::11"), ready: true})
	e.createPod(podSpec{name: "t2", app: "target", status: networkStatus(nad, "169.111.100.12"), ready: false})
	e.createPod(podSpec{name: "no-address", app: "target", status: networkStatus("other", "169.111.100.13"), ready: true})
	e.createPod(podSpec{name: "other-app", app: "other", status: networkStatus(nad, "169.111.100.14"), ready: true})

	t.Run("every endpoint pod, ready or not, gets its Gateway's VIPs and ready SLLBR pods", func(t *testing.T) {
		want := "sllb-a:50000 " + vipsA + " " + hops12
		for _, p := range []string{"t1", "t2"} {
			if d := e.waitNetwork(p, want); d.Generation != 1 || d.Version != targetpod.SchemaVersion ||
				!slices.Equal(d.Gateways[0].Subnets, netipPrefixes("169.111.100.0/24", "fd00:111::/64")) {
				t.Errorf("pod %s: %+v", p, d)
			}
		}
		for _, p := range []string{"no-address", "other-app", "sllbr-1"} {
			if _, ok := e.network(p); ok {
				t.Errorf("pod %s got a network configuration", p)
			}
		}
	})

	t.Run("writes only what changed", func(t *testing.T) {
		rv := e.getPod("t1").ResourceVersion
		// Every pod of the Gateway is reconciled. A patch, not a read and an
		// update: the controller writes the Gateway's status meanwhile (the
		// wait above was on pods only).
		e.mergePatchGateway("sllb-a", map[string]any{"metadata": map[string]any{"labels": map[string]string{"touched": "yes"}}})
		e.patchStatusAnnotation("t1", `{"version":1,"observedGeneration":1,"ready":true}`) // as sllbrd target does
		time.Sleep(500 * time.Millisecond)                                                 // give a wrong write the chance to happen
		if d, _ := e.network("t1"); d.Generation != 1 {
			t.Errorf("generation %d after changes that do not concern the annotation", d.Generation)
		}
		if got := e.getPod("t1").ResourceVersion; got == rv {
			t.Errorf("the status patch did not happen")
		}
	})

	t.Run("SLLBR pods scaling reach every target", func(t *testing.T) {
		w := e.watchPods("t1")
		start := time.Now()
		e.setPodReady(e.getPod("sllbr-3"), true)
		seen := waitWatched(t, w, func(p *corev1.Pod) bool {
			return strings.Contains(p.Annotations[kube.AnnotationTargetNetwork], "169.111.100.3")
		})
		d := e.waitNetwork("t1", "sllb-a:50000 "+vipsA+" v4=[169.111.100.1 169.111.100.2 169.111.100.3] v6=[fd00:111::1 fd00:111::2 fd00:111::3]")
		t.Logf("SLLBR pod ready written -> t1's annotation seen on a watch: %v", seen.Sub(start).Round(time.Millisecond))
		if d.Generation != 2 {
			t.Errorf("generation %d, want 2", d.Generation)
		}
		e.waitNetwork("t2", summary(d))
		// A terminating SLLBR pod is no next hop any more.
		e.deletePod("sllbr-1", 30)
		e.waitNetwork("t1", "sllb-a:50000 "+vipsA+" v4=[169.111.100.2 169.111.100.3] v6=[fd00:111::2 fd00:111::3]")
	})

	t.Run("a new route's VIP is added, and removed with the route", func(t *testing.T) {
		e.createRoute("vip-b", "sllb-a", "service-a", "20.0.0.5")
		e.waitNetwork("t1", "sllb-a:50000 vips=[20.0.0.1/32 20.0.0.5/32 2001:db8::1/128] v4=[169.111.100.2 169.111.100.3] v6=[fd00:111::2 fd00:111::3]")
		if err := e.dyn.Dynamic.Resource(l34RouteGVR).Namespace(e.ns).Delete(e.ctx, "vip-b", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitNetwork("t1", "sllb-a:50000 "+vipsA+" v4=[169.111.100.2 169.111.100.3] v6=[fd00:111::2 fd00:111::3]")
	})

	t.Run("a second Gateway gets another table; tables stay for the Gateway's life", func(t *testing.T) {
		e.createGateway(gatewayObject("sllb-b"))
		e.createService("service-b", "sllb-b", "target", 0)
		e.createRoute("vip-c", "sllb-b", "service-b", "30.0.0.1")
		e.createSLLBRPod("sllbr-b1", "sllb-b", true, "169.111.100.21")
		both := "sllb-a:50000 " + vipsA + " v4=[169.111.100.2 169.111.100.3] v6=[fd00:111::2 fd00:111::3] | sllb-b:50001 vips=[30.0.0.1/32] v4=[169.111.100.21] v6=[]"
		e.waitNetwork("t1", both)
		if err := e.gw.GatewayV1().Gateways(e.ns).Delete(e.ctx, "sllb-a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitNetwork("t1", "sllb-b:50001 vips=[30.0.0.1/32] v4=[169.111.100.21] v6=[]")
		e.collectSLLBR("sllb-a")
		e.createGateway(gatewayObject("sllb-a")) // takes the lowest free table again
		// The new Gateway's Deployment brings up its SLLBR pods anew.
		e.createSLLBRPod("sllbr-2", "sllb-a", true, "169.111.100.2", "fd00:111::2")
		e.createSLLBRPod("sllbr-3", "sllb-a", true, "169.111.100.3", "fd00:111::3")
		e.waitNetwork("t1", both)
	})

	t.Run("invalid Gateway annotations keep the entry", func(t *testing.T) {
		before, _ := e.network("t1")
		// Patches, not reads and updates: the controller writes sllb-b's
		// status meanwhile (it was created in the last subtest, which waited
		// on t1 only).
		e.setGatewayAnnotation("sllb-b", kube.AnnotationNetworkSubnets, "not json")
		e.waitFor("sllb-b not accepted", func() (bool, string) {
			c := conditionOf(e.gateway("sllb-b").Status.Conditions, "Accepted")
			return strings.HasPrefix(c, "False/InvalidAnnotations"), c
		})
		// Recomputed, sllb-b's entry would lose its next hop; it is kept
		// while sllb-a's entry follows its SLLBR pods.
		e.setPodReady(e.getPod("sllbr-b1"), false)
		e.setPodReady(e.getPod("sllbr-2"), false)
		d := e.waitNetwork("t1", "sllb-a:50000 "+vipsA+" v4=[169.111.100.3] v6=[fd00:111::3] | sllb-b:50001 vips=[30.0.0.1/32] v4=[169.111.100.21] v6=[]")
		if d.Generation != before.Generation+1 {
			t.Errorf("generation %d after %d", d.Generation, before.Generation)
		}
		// Valid again: the entry follows its Gateway again.
		e.setGatewayAnnotation("sllb-b", kube.AnnotationNetworkSubnets, `["169.111.100.0/24","fd00:111::/64"]`)
		e.waitNetwork("t1", "sllb-a:50000 "+vipsA+" v4=[169.111.100.3] v6=[fd00:111::3] | sllb-b:50001 vips=[30.0.0.1/32] v4=[] v6=[]")
	})

	t.Run("no SLLBR pod ready: empty next hops (the pod keeps its last ones)", func(t *testing.T) {
		e.setPodReady(e.getPod("sllbr-3"), false)
		for _, p := range []string{"t1", "t2"} { // written one pod at a time
			e.waitNetwork(p, noHops)
		}
	})

	t.Run("an edit by hand is reverted; a pod leaving the Services loses the annotation", func(t *testing.T) {
		e.patchAnnotation("t2", kube.AnnotationTargetNetwork, `{"version":1,"generation":99,"gateways":[]}`)
		e.waitNetwork("t2", noHops)
		// A patch, not an update: the controller may write the pod meanwhile.
		patch := []byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`)
		if _, err := e.kube.CoreV1().Pods(e.ns).Patch(e.ctx, "t2", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitNetwork("t2", "")
	})
}

func netipPrefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

func (e *env) patchAnnotation(pod, key, value string) {
	e.t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if _, err := e.kube.CoreV1().Pods(e.ns).Patch(e.ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("patch Pod %s: %v", pod, err)
	}
}

func (e *env) patchStatusAnnotation(pod, value string) {
	e.t.Helper()
	e.patchAnnotation(pod, kube.AnnotationTargetNetworkStatus, value)
}

// watchPods watches one pod until the test ends.
func (e *env) watchPods(name string) watch.Interface {
	e.t.Helper()
	w, err := e.kube.CoreV1().Pods(e.ns).Watch(e.ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Stop)
	return w
}

// waitWatched returns when a watched pod version satisfying ok arrived.
func waitWatched(t *testing.T, w watch.Interface, ok func(*corev1.Pod) bool) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				t.Fatal("the watch ended")
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod && ok(p) {
				return time.Now()
			}
		case <-ctx.Done():
			t.Fatal("no such pod version on the watch")
		}
	}
}
