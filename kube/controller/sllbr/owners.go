package sllbr

import (
	"cmp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicaSets finds a ReplicaSet of the pods' namespace by name (an
// appslisters.ReplicaSetNamespaceLister).
type ReplicaSets interface {
	Get(name string) (*appsv1.ReplicaSet, error)
}

// ReplicaSetOf returns the ReplicaSet that controls pod: the one its
// controller reference names, by name and UID (a ReplicaSet re-created
// under the same name is another one). Nil when there is none.
func ReplicaSetOf(pod *corev1.Pod, rss ReplicaSets) *appsv1.ReplicaSet {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "ReplicaSet" || ref.APIVersion != appsv1.SchemeGroupVersion.String() || ref.UID == "" {
		return nil
	}
	rs, err := rss.Get(ref.Name)
	if err != nil || rs.UID != ref.UID || rs.Namespace != pod.Namespace {
		return nil
	}
	return rs
}

// PodOf reports whether pod is a pod of the Deployment d, by the owner
// chain: the pod's controller reference names a ReplicaSet (name and UID)
// whose controller reference names d (UID), and the pod runs as the
// ServiceAccount of that ReplicaSet's pod template. Labels are not
// consulted: anyone who can patch pods can set them. Owner references are
// not identity either (whoever may patch a pod may point its controller
// reference at an SLLBR ReplicaSet), but a pod's ServiceAccount is fixed
// when it is created, and only the Deployment's pods run as its own.
func PodOf(pod *corev1.Pod, d *appsv1.Deployment, rss ReplicaSets) bool {
	rs := ReplicaSetOf(pod, rss)
	return rs != nil && serviceAccountOf(pod.Spec) == serviceAccountOf(rs.Spec.Template.Spec) && ReplicaSetOwnedBy(rs, d)
}

// serviceAccountOf is the ServiceAccount a pod of spec runs as ("default"
// when it names none, as the ServiceAccount admission plugin sets it).
func serviceAccountOf(spec corev1.PodSpec) string {
	return cmp.Or(spec.ServiceAccountName, "default")
}

// ReplicaSetOwnedBy reports whether rs is controlled by the Deployment d
// (by UID).
func ReplicaSetOwnedBy(rs *appsv1.ReplicaSet, d *appsv1.Deployment) bool {
	if rs == nil || d == nil || d.UID == "" || rs.Namespace != d.Namespace {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(rs)
	return ref != nil && ref.Kind == "Deployment" && ref.APIVersion == appsv1.SchemeGroupVersion.String() && ref.UID == d.UID
}
