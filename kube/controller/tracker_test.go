package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/kube"
)

func slice(name, uid string, gen int64, rv string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Generation: gen, ResourceVersion: rv}}
}

func TestSliceTracker(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := newSliceTracker()
	tr.now = func() time.Time { return now }
	cached := []*discoveryv1.EndpointSlice{slice("s-ipv4", "u4", 1, "10")}
	if tr.stale("s", cached) {
		t.Fatal("stale without any write")
	}
	tr.wrote("s", slice("s-ipv4", "u4", 2, "11"))
	tr.wrote("s", slice("s-ipv6", "u6", 1, "12"))
	if !tr.stale("s", cached) {
		t.Fatal("a cache without the writes is not stale")
	}
	if tr.stale("other", nil) {
		t.Fatal("another Service is stale")
	}
	cached = []*discoveryv1.EndpointSlice{slice("s-ipv4", "u4", 2, "11")}
	if !tr.stale("s", cached) {
		t.Fatal("the created slice is missing: still stale")
	}
	cached = append(cached, slice("s-ipv6", "u6", 1, "15")) // same generation, later version (a label edit)
	if !tr.stale("s", cached) {
		t.Fatal("same generation, another version: cannot tell, must wait")
	}
	cached[1] = slice("s-ipv6", "u6", 1, "12")
	if tr.stale("s", cached) || len(tr.expected) != 0 {
		t.Fatalf("the cache shows both writes: stale, or %d entries left", len(tr.expected))
	}

	tr.deleted("s", slice("s-ipv6", "u6", 1, "12"))
	if !tr.stale("s", cached) {
		t.Fatal("a deleted slice still cached is not stale")
	}
	cached[1] = slice("s-ipv6", "u6-new", 1, "20") // re-created by someone
	if tr.stale("s", cached) {
		t.Fatal("a slice of another UID is not the deleted one")
	}

	tr.wrote("s", slice("s-ipv4", "u4", 3, "30"))
	now = now.Add(trackerPatience + time.Millisecond)
	if tr.stale("s", cached) {
		t.Fatal("a write never seen blocks the Service past the patience")
	}
	tr.wrote("s", slice("s-ipv4", "u4", 3, "30"))
	cached[0] = slice("s-ipv4", "u4", 4, "40")
	if tr.stale("s", cached) {
		t.Fatal("a later generation shows the write")
	}
}

func TestEndpointRelevantChange(t *testing.T) {
	base := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}, Annotations: map[string]string{kube.AnnotationNetworkStatus: "[]",
			kube.AnnotationTargetNetworkStatus: `{"version":1,"observedGeneration":1,"ready":true}`}}, // the node daemon's pod
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
				Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}}}}},
	}
	same := base.DeepCopy()
	same.Annotations["other"] = "x"
	same.Status.Conditions = append(same.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse})
	same.Status.ContainerStatuses[0].Ready = true // the pod's Ready condition says it
	same.Annotations[kube.AnnotationTargetNetworkStatus] = `{"version":1,"observedGeneration":2,"ready":true,"agent":"node/n1","gateways":[{"name":"g"}]}`
	if endpointRelevantChange(base, same) {
		t.Error("an unrelated annotation, condition or container field, or a status rewrite that stays ready, counts as a change")
	}
	sidecar := base.DeepCopy()
	sidecar.Annotations[kube.AnnotationTargetAgent] = kube.TargetAgentSidecar
	notApplied := sidecar.DeepCopy()
	notApplied.Annotations[kube.AnnotationTargetNetworkStatus] = `{"version":1,"ready":false}`
	if endpointRelevantChange(sidecar, notApplied) {
		t.Error("the status of a sidecar's pod counts as a change (its Ready condition says it)")
	}
	waiting := base.DeepCopy()
	delete(waiting.Annotations, kube.AnnotationTargetNetworkStatus)
	if !endpointRelevantChange(waiting, notApplied) {
		t.Error("a pod waiting for the node daemon, marked sidecar, is not a change")
	}
	for name, edit := range map[string]func(*corev1.Pod){
		"labels":         func(p *corev1.Pod) { p.Labels["app"] = "b" },
		"network-status": func(p *corev1.Pod) { p.Annotations[kube.AnnotationNetworkStatus] = `[{}]` },
		"phase":          func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded },
		"readiness":      func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse },
		"deletion":       func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} },
		"node":           func(p *corev1.Pod) { p.Spec.NodeName = "n1" },
		// Whether its network configuration is applied.
		"the status's ready bit": func(p *corev1.Pod) {
			p.Annotations[kube.AnnotationTargetNetworkStatus] = `{"version":1,"observedGeneration":1,"ready":false}`
		},
		"the status removed": func(p *corev1.Pod) { delete(p.Annotations, kube.AnnotationTargetNetworkStatus) },
		"an invalid status":  func(p *corev1.Pod) { p.Annotations[kube.AnnotationTargetNetworkStatus] = `{` },
		"an unknown agent":   func(p *corev1.Pod) { p.Annotations[kube.AnnotationTargetAgent] = "Node" },
		// They end a readiness hold at once.
		"containers' readiness": func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse})
		},
		"a container restart": func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC))
		},
		"a container that stops": func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
		},
	} {
		p := base.DeepCopy()
		edit(p)
		if !endpointRelevantChange(base, p) {
			t.Errorf("a change of %s is ignored", name)
		}
	}
}

func TestPodSelectorIgnoresTheDummyKey(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Selector: map[string]string{kube.LabelDummyServiceSelector: "true"}}}
	if podSelector(svc) != nil {
		t.Error("a selector of only the dummy key selects pods")
	}
	svc.Spec.Selector["app"] = "a"
	if got := podSelector(svc).String(); got != "app=a" {
		t.Errorf("selector %q", got)
	}
	if len(svc.Spec.Selector) != 2 {
		t.Error("podSelector modified the Service")
	}
}
