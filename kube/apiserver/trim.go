package apiserver

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// lastAppliedAnnotation is where kubectl apply keeps a copy of the object.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// trimForCache is the informers' transform: before an object enters a
// cache it loses what sllbrd never reads. Every object: managedFields
// (server-side apply bookkeeping, often as large as the object) and kubectl's
// last-applied annotation (a second copy of it). Services: spec and status
// (the translator reads their labels and annotations only). Gateways:
// listeners, addresses and status (it reads spec.infrastructure). Anything
// else passes unchanged (tombstones too).
func trimForCache(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil
	}
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a[lastAppliedAnnotation] != "" {
		a = maps.Clone(a)
		delete(a, lastAppliedAnnotation)
		m.SetAnnotations(a)
	}
	switch o := obj.(type) {
	case *corev1.Service:
		o.Spec, o.Status = corev1.ServiceSpec{}, corev1.ServiceStatus{}
	case *gatewayv1.Gateway:
		o.Spec = gatewayv1.GatewaySpec{GatewayClassName: o.Spec.GatewayClassName, Infrastructure: o.Spec.Infrastructure}
		o.Status = gatewayv1.GatewayStatus{}
	}
	return obj, nil
}
