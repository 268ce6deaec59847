package controller_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/translate"
)

var nad = "sllbrd-ctl-eps/" + nadName // Multus' name of the Gateway's network

// TestIntegrationEndpointSlices runs the controller as deploy/controller's
// ServiceAccount and plays kubelet and Multus on Pod objects.
func TestIntegrationEndpointSlices(t *testing.T) {
	e := newEnv(t, "sllbrd-ctl-eps")
	e.createClass()
	gw := e.createGateway(gatewayObject("sllb-a"))
	svc := e.createService("service-a", "sllb-a", "target", 0)
	r := e.startController("only")
	e.waitLeading(r)

	t.Run("single- and dual-stack pods", func(t *testing.T) {
		e.createPod(podSpec{name: "p1-v4", app: "target", status: networkStatus(nad, "169.111.100.11"), ready: true})
		e.createPod(podSpec{name: "p2-dual", app: "target", status: networkStatus(nadName, "fd00:111::12", "169.111.100.12"), ready: true})
		e.createPod(podSpec{name: "p3-v6", app: "target", status: networkStatus(nad, "fd00:111::13"), ready: false})
		want := map[string]endpoint{
			"p1-v4":   {id: 0, v4: "169.111.100.11", ready: true, serving: true},
			"p2-dual": {id: 1, v4: "169.111.100.12", v6: "fd00:111::12", ready: true, serving: true},
			"p3-v6":   {id: 2, v6: "fd00:111::13"},
		}
		e.waitEndpoints("service-a", "the three pods as "+describe(want), func(eps map[string]endpoint) bool { return maps.Equal(eps, want) })
		for _, s := range e.slices("service-a") {
			if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != svc.UID || s.OwnerReferences[0].Kind != "Service" {
				t.Errorf("slice %s owners %+v", s.Name, s.OwnerReferences)
			}
			for _, ep := range s.Endpoints {
				if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID == "" {
					t.Errorf("slice %s endpoint %v: targetRef %+v", s.Name, ep.Addresses, ep.TargetRef)
				}
			}
		}
		// What the dataplane reads: the translator accepts every endpoint.
		checkDataplaneReads(t, e, gw.Name, "service-a", 4)
	})

	t.Run("pods on other networks or subnets, or only on the pod network", func(t *testing.T) {
		e.createPod(podSpec{name: "other-net", app: "target", status: networkStatus("sllbrd-ctl-eps/vlan-100", "169.111.100.21"), ready: true})
		e.createPod(podSpec{name: "other-subnet", app: "target", status: networkStatus(nad, "169.111.101.22", "fd00:112::22"), ready: true})
		e.createPod(podSpec{name: "default-only", app: "target", ready: true,
			status: `[{"name":"kindnet","interface":"eth0","ips":["169.111.100.23"],"default":true}]`})
		for _, p := range []string{"other-net", "other-subnet", "default-only"} {
			e.waitEvent("Pod", p, "NoAddressOnNetwork", "no address in the Gateway's network-subnets [169.111.100.0/24 fd00:111::/64]")
		}
		if eps := e.endpoints("service-a"); !sameKeys(eps, "p1-v4", "p2-dual", "p3-v6") {
			t.Errorf("endpoints %s", describe(eps))
		}
		e.waitFor("3 pods counted as skipped", func() (bool, string) {
			got := metricValue(t, r.metrics, "sllbrd_controller_service_pods_skipped", map[string]string{"service": "service-a", "reason": "NoAddressOnNetwork"})
			return got == 3, fmt.Sprint(got)
		})
	})

	t.Run("malformed network-status", func(t *testing.T) {
		e.createPod(podSpec{name: "malformed", app: "target", status: `[{"name": 7}`, ready: true})
		e.waitEvent("Pod", "malformed", "InvalidNetworkStatus", "not a JSON list")
		// The other pods are unaffected and the controller still follows them.
		e.setNetworkStatus("p1-v4", networkStatus(nad, "169.111.100.31"))
		eps := e.waitEndpoints("service-a", "p1-v4 moved to .31", func(eps map[string]endpoint) bool { return eps["p1-v4"].v4 == "169.111.100.31" })
		if !sameKeys(eps, "p1-v4", "p2-dual", "p3-v6") || eps["p1-v4"].id != 0 {
			t.Errorf("endpoints %s", describe(eps))
		}
		e.setNetworkStatus("malformed", networkStatus(nad, "169.111.100.32"))
		eps = e.waitEndpoints("service-a", "the repaired pod listed", func(eps map[string]endpoint) bool { return len(eps) == 4 })
		if eps["malformed"].id != 3 {
			t.Errorf("repaired pod got identifier %d, want 3", eps["malformed"].id)
		}
	})

	t.Run("readiness flaps keep the identifier; latency", func(t *testing.T) {
		lat := measureFlaps(t, e, "p2-dual", "service-a", 2, 20)
		slices.Sort(lat)
		t.Logf("pod status write -> both EndpointSlices written (watch event), %d writes: min %v median %v max %v",
			len(lat), lat[0].Round(time.Microsecond), lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
		eps := e.waitEndpoints("service-a", "p2 ready after the flaps", func(eps map[string]endpoint) bool { return eps["p2-dual"].ready })
		if eps["p2-dual"].id != 1 {
			t.Errorf("after the flaps: %s", eps["p2-dual"])
		}
	})

	t.Run("writes only what changed", func(t *testing.T) {
		e.waitEndpoints("service-a", "settled", func(map[string]endpoint) bool { return true })
		before := versions(e.slices("service-a"))
		succeeded := map[string]string{"kind": "Service", "result": "success"}
		reconciles := metricValue(t, r.metrics, "sllbrd_controller_reconciles_total", succeeded)
		// A pod change that cannot change its endpoint, and a Service change
		// that is reconciled but leaves the slices as they are.
		pod := e.getPod("p1-v4")
		pod.Labels["unrelated"] = "x"
		if _, err := e.kube.CoreV1().Pods(e.ns).Update(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		s, _ := e.kube.CoreV1().Services(e.ns).Get(e.ctx, "service-a", metav1.GetOptions{})
		s.Annotations = map[string]string{"note": "touched"}
		if _, err := e.kube.CoreV1().Services(e.ns).Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitFor("the Service reconciled again", func() (bool, string) {
			return metricValue(t, r.metrics, "sllbrd_controller_reconciles_total", succeeded) > reconciles, ""
		})
		if after := versions(e.slices("service-a")); !maps.Equal(before, after) {
			t.Errorf("slices rewritten without a change: %v -> %v", before, after)
		}
	})

	t.Run("deletion: terminating keeps the identifier until the object is gone", func(t *testing.T) {
		e.createPod(podSpec{name: "p5-node", app: "target", node: "node-1", status: networkStatus(nad, "169.111.100.15", "fd00:111::15"), ready: true})
		eps := e.waitEndpoints("service-a", "p5 listed", func(eps map[string]endpoint) bool { return eps["p5-node"].ready })
		id := eps["p5-node"].id
		e.deletePod("p5-node", 30) // graceful: the object stays until kubelet confirms
		eps = e.waitEndpoints("service-a", "p5 terminating", func(eps map[string]endpoint) bool { return eps["p5-node"].terminating })
		if ep := eps["p5-node"]; ep.ready || !ep.serving || ep.id != id {
			t.Errorf("terminating pod: %s, want ready false, serving true, identifier %d", ep, id)
		}
		e.deletePod("p5-node", 0) // kubelet's final delete
		e.waitEndpoints("service-a", "p5 gone", func(eps map[string]endpoint) bool { _, ok := eps["p5-node"]; return !ok })
		e.createPod(podSpec{name: "p5-node", app: "target", status: networkStatus(nad, "169.111.100.16"), ready: true})
		eps = e.waitEndpoints("service-a", "p5 re-created", func(eps map[string]endpoint) bool { return eps["p5-node"].v4 == "169.111.100.16" })
		if eps["p5-node"].id != id {
			t.Errorf("re-created pod got %d, want the lowest free %d", eps["p5-node"].id, id)
		}
		if got := ids(eps); got["p1-v4"] != 0 || got["p2-dual"] != 1 || got["p3-v6"] != 2 || got["malformed"] != 3 {
			t.Errorf("other identifiers moved: %v", got)
		}
	})

	t.Run("a failed write: an Event, retries, recovery", func(t *testing.T) {
		roles := e.kube.RbacV1().Roles(e.ns)
		role, err := roles.Get(e.ctx, "sllbrd-controller", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		granted := role.DeepCopy()
		for i, r := range role.Rules {
			if slices.Contains(r.Resources, "endpointslices") {
				role.Rules[i].Verbs = []string{"list", "watch"} // no more writes
			}
		}
		if _, err := roles.Update(e.ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.createService("service-c", "sllb-a", "c", 0)
		e.createPod(podSpec{name: "c1", app: "c", status: networkStatus(nad, "169.111.100.41"), ready: true})
		e.waitEvent("Service", "service-c", "ReconcileFailed", "forbidden")
		current, _ := roles.Get(e.ctx, "sllbrd-controller", metav1.GetOptions{})
		granted.ResourceVersion = current.ResourceVersion
		if _, err := roles.Update(e.ctx, granted, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitEndpoints("service-c", "c1 listed after the grant is back", func(eps map[string]endpoint) bool { return eps["c1"].ready })
	})

	t.Run("a pod that leaves the selector leaves the slices", func(t *testing.T) {
		pod := e.getPod("p3-v6")
		pod.Labels["app"] = "elsewhere"
		if _, err := e.kube.CoreV1().Pods(e.ns).Update(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitEndpoints("service-a", "p3 gone", func(eps map[string]endpoint) bool { _, ok := eps["p3-v6"]; return !ok })
		if n := len(e.slices("service-a")); n != 2 {
			t.Errorf("%d slices", n)
		}
	})
}

// checkDataplaneReads translates the Service's slices as sllbrd does and
// expects want endpoints (addresses) and no problem.
func checkDataplaneReads(t *testing.T, e *env, gateway, service string, want int) {
	t.Helper()
	gw, err := e.gw.GatewayV1().Gateways(e.ns).Get(e.ctx, gateway, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := e.kube.CoreV1().Services(e.ns).Get(e.ctx, service, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var slices []*discoveryv1.EndpointSlice
	for _, s := range e.slices(service) {
		slices = append(slices, &s)
	}
	state, problems, err := translate.Translate(translate.Snapshot{Gateway: gw, Services: []*corev1.Service{svc}, EndpointSlices: slices})
	if err != nil || len(problems) != 0 || len(state.Services) != 1 || len(state.Services[0].Endpoints) != want {
		t.Errorf("the dataplane reads: err %v problems %v state %+v", err, problems, state)
	}
}

// versions returns slice name -> resourceVersion.
func versions(ss []discoveryv1.EndpointSlice) map[string]string {
	out := map[string]string{}
	for _, s := range ss {
		out[s.Name] = s.ResourceVersion
	}
	return out
}

// measureFlaps flips a pod's readiness n times, each time waiting for the
// writes of its slices (one per family) on a watch, and returns the time
// from each pod status write returning to the last slice event arriving.
func measureFlaps(t *testing.T, e *env, pod, service string, families, n int) []time.Duration {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{kube.LabelServiceName: service})
	w, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Watch(e.ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var lat []time.Duration
	p := e.getPod(pod)
	for i := range n {
		ready := i%2 == 1
		p = e.setPodReady(p, ready)
		written := time.Now()
		waitSliceReady(t, w.ResultChan(), pod, ready, families)
		lat = append(lat, time.Since(written))
	}
	if n%2 == 1 {
		e.setPodReady(p, true)
	}
	return lat
}

// waitSliceReady reads watch events until slices of the given number of
// families show pod with the given readiness.
func waitSliceReady(t *testing.T, events <-chan watch.Event, pod string, ready bool, families int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	seen := map[discoveryv1.AddressType]bool{}
	for len(seen) < families {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("watch ended")
			}
			s, isSlice := ev.Object.(*discoveryv1.EndpointSlice)
			if !isSlice || ev.Type == watch.Deleted {
				continue
			}
			for _, ep := range s.Endpoints {
				if ep.TargetRef != nil && ep.TargetRef.Name == pod && *ep.Conditions.Ready == ready {
					seen[s.AddressType] = true
				}
			}
		case <-ctx.Done():
			t.Fatalf("no slice showed %s ready=%v within %v", pod, ready, waitTimeout)
		}
	}
}

// metricValue returns the value of the series of name with the labels
// (counters, gauges), 0 when absent.
func metricValue(t *testing.T, c prometheus.Collector, name string, want map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if maps.Equal(got, want) {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}
