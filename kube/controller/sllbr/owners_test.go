package sllbr

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// fakeReplicaSets is a ReplicaSet lister over a map.
type fakeReplicaSets map[string]*appsv1.ReplicaSet

func (f fakeReplicaSets) Get(name string) (*appsv1.ReplicaSet, error) {
	if rs, ok := f[name]; ok {
		return rs, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, name)
}

func controllerRef(kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}
}

func replicaSet(name string, uid types.UID, owner metav1.OwnerReference) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid,
		OwnerReferences: []metav1.OwnerReference{owner}}}
}

// sllbrPod is a pod with the labels of sllb-a's SLLBR pods and the owners
// given.
func sllbrPod(name string, owners ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: Selector("sllb-a"), OwnerReferences: owners}}
}

func TestPodOfFollowsOwnersNotLabels(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "sllbrd-sllb-a", Namespace: "ns", UID: "d-uid"}}
	rss := fakeReplicaSets{
		"sllbrd-sllb-a-1": replicaSet("sllbrd-sllb-a-1", "rs-uid", controllerRef("Deployment", "sllbrd-sllb-a", "d-uid")),
		"impostor":        replicaSet("impostor", "other-rs-uid", controllerRef("Deployment", "impostor", "other-d-uid")),
		"orphan":          {ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "ns", UID: "orphan-uid"}},
	}
	notController := controllerRef("ReplicaSet", "sllbrd-sllb-a-1", "rs-uid")
	notController.Controller = nil
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"the Deployment's pod", sllbrPod("p1", controllerRef("ReplicaSet", "sllbrd-sllb-a-1", "rs-uid")), true},
		{"look-alike of another ReplicaSet", sllbrPod("p2", controllerRef("ReplicaSet", "impostor", "other-rs-uid")), false},
		{"look-alike without owner", sllbrPod("p3"), false},
		{"the ReplicaSet's name with another UID", sllbrPod("p4", controllerRef("ReplicaSet", "sllbrd-sllb-a-1", "old-rs-uid")), false},
		{"an owner that is not the controller", sllbrPod("p5", notController), false},
		{"a ReplicaSet no Deployment controls", sllbrPod("p6", controllerRef("ReplicaSet", "orphan", "orphan-uid")), false},
		{"a ReplicaSet not in the cache", sllbrPod("p7", controllerRef("ReplicaSet", "gone", "gone-uid")), false},
		{"the ReplicaSet's pod under another ServiceAccount", func() *corev1.Pod {
			p := sllbrPod("p8", controllerRef("ReplicaSet", "sllbrd-sllb-a-1", "rs-uid"))
			p.Spec.ServiceAccountName = "app"
			return p
		}(), false},
		{"a controller of another kind", sllbrPod("p8", controllerRef("StatefulSet", "sllbrd-sllb-a-1", "rs-uid")), false},
	} {
		if got := PodOf(tc.pod, d, rss); got != tc.want {
			t.Errorf("%s: PodOf = %v, want %v", tc.name, got, tc.want)
		}
	}
	other := d.DeepCopy()
	other.UID = "other-d-uid"
	if PodOf(sllbrPod("p1", controllerRef("ReplicaSet", "sllbrd-sllb-a-1", "rs-uid")), other, rss) {
		t.Errorf("a pod of one Deployment is taken for another's")
	}
	elsewhere := sllbrPod("p9", controllerRef("ReplicaSet", "sllbrd-sllb-a-1", "rs-uid"))
	elsewhere.Namespace = "other-ns"
	if PodOf(elsewhere, d, rss) {
		t.Errorf("a pod of another namespace is taken for one of the Deployment's")
	}
	if PodOf(sllbrPod("p1", controllerRef("ReplicaSet", "sllbrd-sllb-a-1", "rs-uid")), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}, rss) {
		t.Errorf("a Deployment without a UID (not created) owns pods")
	}
}
