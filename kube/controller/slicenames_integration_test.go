package controller_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/sllbrd/sllbrd/kube"
)

// TestIntegrationSliceNames hands the Lease to a standby whose slice watch
// lags: it finds the slices the old leader created for a Service missing
// from its cache, and the names taken when it creates them. Its own slices
// (the controller's label and a controller reference to the Service, by
// UID) are waited for, with no Event; a name taken by someone else's slice
// gets an EndpointSliceNameTaken Event saying whose it is.
func TestIntegrationSliceNames(t *testing.T) {
	const sliceLag = 4 * time.Second
	e := newEnv(t, "sllbrd-ctl-names")
	history := e.recordSlices()
	e.createClass()
	e.createGateway(gatewayObject("sllb-a"))
	net := "sllbrd-ctl-names/" + nadName
	pod := func(name, app string, n int) podSpec {
		return podSpec{name: name, app: app, ready: true,
			status: networkStatus(net, fmt.Sprintf("169.111.100.%d", n), fmt.Sprintf("fd00:111::%d", n))}
	}
	a := e.startController("a")
	e.waitLeading(a)
	b := e.startControllerWith(lagging(e.ctlSA, map[string]time.Duration{"endpointslices": sliceLag}), "b")
	e.waitFor("b synced", func() (bool, string) { ok, _ := b.ctl.Ready(); return ok, "" })

	e.createService("service-c", "sllb-a", "c", 0)
	e.createPod(pod("c1", "c", 1))
	want := map[string]int{"c1": 0}
	e.waitEndpoints("service-c", "a writes service-c's slices", func(eps map[string]endpoint) bool { return maps.Equal(ids(eps), want) })
	created := time.Now()
	if err := a.stop(); err != nil {
		t.Fatalf("controller a: %v", err)
	}
	e.waitLeading(b)
	if led := time.Since(created); led > sliceLag-time.Second {
		t.Fatalf("b led %v after the slices were written, its slice watch lags %v: the test did not make its case", led, sliceLag)
	}
	// b's cache catches up; a change afterwards shows that b writes the
	// slices it waited for.
	time.Sleep(sliceLag)
	e.setPodReady(e.getPod("c1"), false)
	e.waitEndpoints("service-c", "b writes c1 not ready", func(eps map[string]endpoint) bool { return !eps["c1"].ready && eps["c1"].id == 0 })

	// Names taken by slices that are not the Service's own.
	foreign := func(name, service, manager string, owner *metav1.OwnerReference) {
		t.Helper()
		s := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelServiceName: service,
				kube.LabelEndpointSliceManagedBy: manager}},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
		if owner != nil {
			s.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		if _, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Create(e.ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create EndpointSlice %s: %v", name, err)
		}
	}
	foreign("service-d-ipv4", "service-d", "someone-else", nil)
	foreign("service-e-ipv4", "service-e", kube.EndpointSliceManager, nil)
	foreign("service-f-ipv4", "service-f", kube.EndpointSliceManager, &metav1.OwnerReference{APIVersion: "v1", Kind: "Service",
		Name: "service-f", UID: types.UID("an-earlier-service-f"), Controller: ptr.To(true)})
	for i, svc := range []string{"service-d", "service-e", "service-f"} {
		app := svc[len(svc)-1:]
		e.createService(svc, "sllb-a", app, 0)
		e.createPod(pod(app+"1", app, 10+i))
	}
	e.waitEvent("Service", "service-d", "EndpointSliceNameTaken",
		`EndpointSlice service-d-ipv4 exists and is not this Service's slice of sllbrd-controller.meridio-experiment (its label endpointslice.kubernetes.io/managed-by is "someone-else"); delete it`)
	e.waitEvent("Service", "service-e", "EndpointSliceNameTaken", "(it is not controlled by this Service (UID")
	e.waitEvent("Service", "service-f", "EndpointSliceNameTaken", "(it belongs to an earlier Service of that name); the garbage collector deletes it")

	// The Events above were written after any about service-c would have
	// been (one recorder, in order).
	for _, reason := range []string{"EndpointSliceNameTaken", "ReconcileFailed"} {
		if notes := e.events("Service", "service-c", reason); len(notes) > 0 {
			t.Errorf("service-c, whose slices are the controller's own, got %s Events: %q", reason, notes)
		}
	}
	checkNoFlip(t, history.events(t), "service-c", nil)
	// A slice with the controller's label that is not its own is left
	// as it is.
	s, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Get(e.ctx, "service-e-ipv4", metav1.GetOptions{})
	if err != nil || len(s.OwnerReferences) != 0 || len(s.Endpoints) != 0 {
		t.Errorf("service-e-ipv4, someone else's slice with the controller's label, was changed: %v %+v", err, s)
	}
}
