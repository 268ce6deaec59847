package endpoints

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// PodsBehind compares a Service's slices with a cache of its namespace's
// pods (cached returns the cached pod of a name, nil when none), as a
// replica whose pod cache lags its slice cache (a new leader: the old one
// wrote the slices from a newer view) must not write from it: pods the
// slices list would lose their identifiers, and come back with new ones.
// behind is true when the cache is older for sure: a pod the slices list
// as terminating is cached not being deleted (a deletion is never undone).
// unknown lists the pods the slices list that the cache lacks (by name and
// UID): the cache is behind when one of them exists, which only the API
// server can tell (the pod may be gone as well).
func PodsBehind(existing []*discoveryv1.EndpointSlice, cached func(name string) *corev1.Pod) (unknown []corev1.ObjectReference, behind bool) {
	seen := map[string]bool{}
	for _, s := range existing {
		for _, ep := range s.Endpoints {
			ref := ep.TargetRef
			if ref == nil || ref.Kind != "Pod" || ref.UID == "" || seen[string(ref.UID)] {
				continue
			}
			seen[string(ref.UID)] = true
			p := cached(ref.Name)
			switch {
			case p == nil || p.UID != ref.UID:
				unknown = append(unknown, *ref)
			case ep.Conditions.Terminating != nil && *ep.Conditions.Terminating && p.DeletionTimestamp == nil:
				return nil, true
			}
		}
	}
	return unknown, false
}
