package endpoints

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/sllbrd/sllbrd/kube"
)

func TestManaged(t *testing.T) {
	slice := func(label string, owner *metav1.OwnerReference) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "service-a-ipv4",
			Labels: map[string]string{kube.LabelServiceName: "service-a"}}}
		if label != "" {
			s.Labels[kube.LabelEndpointSliceManagedBy] = label
		}
		if owner != nil {
			s.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return s
	}
	owner := func(kind, name, uid string, controller bool) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: "v1", Kind: kind, Name: name, UID: types.UID("uid-" + uid), Controller: ptr.To(controller)}
	}
	ours := kube.EndpointSliceManager
	for _, tc := range []struct {
		name string
		s    *discoveryv1.EndpointSlice
		uid  string // "" for any
		want bool
	}{
		{"written by the controller for the Service", slice(ours, owner("Service", "service-a", "svc", true)), "svc", true},
		{"any UID while the Service is gone", slice(ours, owner("Service", "service-a", "old", true)), "", true},
		{"an earlier Service of the name", slice(ours, owner("Service", "service-a", "old", true)), "svc", false},
		{"our label, no owner", slice(ours, nil), "svc", false},
		{"our label, owned but not controlled", slice(ours, owner("Service", "service-a", "svc", false)), "svc", false},
		{"our label, another Service", slice(ours, owner("Service", "service-b", "svc", true)), "svc", false},
		{"our label, another kind", slice(ours, owner("Pod", "service-a", "svc", true)), "svc", false},
		{"Kubernetes' own slice of the Service", slice("endpointslice-controller.k8s.io", owner("Service", "service-a", "svc", true)), "svc", false},
		{"no label", slice("", owner("Service", "service-a", "svc", true)), "svc", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid := types.UID("")
			if tc.uid != "" {
				uid = types.UID("uid-" + tc.uid)
			}
			if got := Managed(tc.s, "service-a", uid); got != tc.want {
				t.Errorf("Managed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodsBehind(t *testing.T) {
	listed := func(terminating bool, pods ...*corev1.Pod) []*discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{}
		for _, p := range pods {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"169.111.100.1"},
				Conditions: discoveryv1.EndpointConditions{Terminating: ptr.To(terminating)},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: p.Name, UID: p.UID}})
		}
		return []*discoveryv1.EndpointSlice{s, s.DeepCopy()} // both families list the pods
	}
	a, b := newPod("a", ""), newPod("b", "")
	bNew := newPod("b", "")
	bNew.UID = "uid-b-2"
	deleting := newPod("a", "")
	deleting.DeletionTimestamp = &metav1.Time{}
	cache := func(pods ...*corev1.Pod) func(string) *corev1.Pod {
		return func(name string) *corev1.Pod {
			for _, p := range pods {
				if p.Name == name {
					return p
				}
			}
			return nil
		}
	}
	names := func(refs []corev1.ObjectReference) []string {
		var out []string
		for _, r := range refs {
			out = append(out, r.Name+"/"+string(r.UID))
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		slices  []*discoveryv1.EndpointSlice
		cached  []*corev1.Pod
		unknown []string
		behind  bool
	}{
		{"the cache has every listed pod", listed(false, a, b), []*corev1.Pod{a, b}, nil, false},
		{"a listed pod is missing: ask once", listed(false, a, b), []*corev1.Pod{a}, []string{"b/uid-b"}, false},
		{"a listed pod's name has another UID in the cache: ask", listed(false, a, b), []*corev1.Pod{a, bNew}, []string{"b/uid-b"}, false},
		{"listed terminating, cached not being deleted: behind", listed(true, a), []*corev1.Pod{a}, nil, true},
		{"listed terminating, cached being deleted", listed(true, a), []*corev1.Pod{deleting}, nil, false},
		{"listed ready, cached being deleted (the slices are behind, not the pods)", listed(false, a), []*corev1.Pod{deleting}, nil, false},
		{"no slices", nil, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unknown, behind := PodsBehind(tc.slices, cache(tc.cached...))
			if behind != tc.behind || !slices.Equal(names(unknown), tc.unknown) {
				t.Errorf("PodsBehind = %v, %v; want %v, %v", names(unknown), behind, tc.unknown, tc.behind)
			}
		})
	}
}
