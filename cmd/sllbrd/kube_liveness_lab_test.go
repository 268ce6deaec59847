package main

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestIntegrationLivenessEvents: sllbrd configured from a real
// kube-apiserver, as the ServiceAccount bound by deploy/rbac (so its Role
// is proven sufficient), writes a Warning Event regarding the Service (by
// its UID, as kubectl describe finds it) when it finds an endpoint dead,
// and related to its EndpointSlice endpoint (so that the Event of each
// endpoint is its own, not a count on another's), and takes the endpoint
// out: its flows reach other targets.
func TestIntegrationLivenessEvents(t *testing.T) {
	k := startKubeLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc, err := k.kube.CoreV1().Services(kubeNamespace).Get(ctx, "service-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitAlive(t, k.inst, "t2", true)
	base := baselineFlows(t, k.lab, 44000)
	faultAt := time.Now()
	linkDown.apply(t, k.lab, "t2")
	t.Cleanup(func() { linkDown.restore(t, k.lab, "t2") })
	var found []eventsv1.Event
	for deadline := time.Now().Add(20 * time.Second); len(found) < 2 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		evs, err := k.kube.EventsV1().Events(kubeNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found = found[:0]
		for _, ev := range evs.Items {
			if ev.Reason == reasonEndpointDead {
				found = append(found, ev)
			}
		}
	}
	if len(found) != 2 {
		t.Fatalf("%d EndpointDead Events after 20 s, want 2 (one per address of t2)", len(found))
	}
	for _, ev := range found {
		r := ev.Regarding
		if r.Kind != "Service" || r.Name != "service-a" || r.Namespace != kubeNamespace || r.UID != svc.UID ||
			ev.Type != corev1.EventTypeWarning || ev.Action != eventActionProbe || ev.ReportingController != "sllbrd" ||
			!strings.Contains(ev.Note, "did not answer ICMP echo") || ev.Related == nil || ev.Related.Kind != "EndpointSlice" ||
			!strings.HasPrefix(ev.Related.FieldPath, "endpoints[") {
			t.Errorf("Event %+v", ev)
		}
		t.Logf("Event %s %s from %s %v after the fault, related to %s %s: %s", ev.Type, ev.Reason, ev.ReportingInstance,
			ev.EventTime.Sub(faultAt).Round(time.Millisecond), ev.Related.Name, ev.Related.FieldPath, ev.Note)
	}
	for i, got := range baselineFlows(t, k.lab, 44000) {
		moved, _ := checkOnlyMoved(t, []string{"ipv4", "ipv6"}[i], base[i], got, "t2")
		if sum(moved) == 0 {
			t.Errorf("no flow of t2 among the %d flows", len(base[i]))
		}
	}
}
