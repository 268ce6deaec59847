package endpoints

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sllbrd/sllbrd/kube"
)

// MaxEndpointsPerSlice is the most endpoints one slice holds (what
// Kubernetes' own EndpointSlice controller uses by default; the API allows
// 1000).
const MaxEndpointsPerSlice = 100

// Endpoint is a candidate with its identifier.
type Endpoint struct {
	Candidate
	ID int
}

// Plan is what to write so that the Service's slices hold the endpoints.
type Plan struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
}

// Empty reports whether there is nothing to write.
func (p Plan) Empty() bool { return len(p.Create)+len(p.Update)+len(p.Delete) == 0 }

// family is one address family's slice naming and address choice.
type family struct {
	typ    discoveryv1.AddressType
	suffix string
	addr   func(Addresses) netip.Addr
}

var families = []family{
	{discoveryv1.AddressTypeIPv4, "ipv4", func(a Addresses) netip.Addr { return a.V4 }},
	{discoveryv1.AddressTypeIPv6, "ipv6", func(a Addresses) netip.Addr { return a.V6 }},
}

// PlanSlices returns the writes that turn existing (the Service's slices
// managed by the controller) into the slices of endpoints.
func PlanSlices(svc *corev1.Service, endpoints []Endpoint, existing []*discoveryv1.EndpointSlice) Plan {
	var plan Plan
	for _, s := range existing {
		if !slices.ContainsFunc(families, func(f family) bool { return f.typ == s.AddressType }) {
			plan.Delete = append(plan.Delete, s)
		}
	}
	for _, f := range families {
		var mine []*discoveryv1.EndpointSlice
		for _, s := range existing {
			if s.AddressType == f.typ {
				mine = append(mine, s)
			}
		}
		planFamily(&plan, svc, f, endpoints, mine)
	}
	return plan
}

func planFamily(plan *Plan, svc *corev1.Service, f family, endpoints []Endpoint, existing []*discoveryv1.EndpointSlice) {
	var eps []Endpoint
	for _, ep := range endpoints {
		if f.addr(ep.Addrs).IsValid() {
			eps = append(eps, ep)
		}
	}
	slices.SortFunc(eps, func(a, b Endpoint) int { return cmp.Compare(a.ID, b.ID) })
	existing = slices.Clone(existing)
	slices.SortFunc(existing, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	buckets := place(svc.Name, f, eps, existing)
	for _, s := range existing {
		content := buckets.content[s.Name]
		if len(content) == 0 {
			plan.Delete = append(plan.Delete, s)
			continue
		}
		if want := build(s.DeepCopy(), svc, f, content); !equality.Semantic.DeepEqual(want, s) {
			plan.Update = append(plan.Update, want)
		}
	}
	for _, name := range buckets.added {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: svc.Namespace}}
		plan.Create = append(plan.Create, build(s, svc, f, buckets.content[name]))
	}
}

// buckets assigns endpoints to slice names.
type buckets struct {
	order   []string // existing names, then added ones
	added   []string
	content map[string][]Endpoint
}

// place keeps every endpoint in the slice that holds it while that slice
// has room, and puts the others in the first slice with room, adding slices
// as needed.
func place(service string, f family, eps []Endpoint, existing []*discoveryv1.EndpointSlice) buckets {
	b := buckets{content: map[string][]Endpoint{}}
	where := map[string]string{} // pod UID -> slice name
	for _, s := range existing {
		b.order = append(b.order, s.Name)
		for _, ep := range s.Endpoints {
			if ep.TargetRef != nil {
				where[string(ep.TargetRef.UID)] = s.Name
			}
		}
	}
	var pending []Endpoint
	for _, ep := range eps {
		name, ok := where[string(ep.Pod.UID)]
		if ok && len(b.content[name]) < MaxEndpointsPerSlice {
			b.content[name] = append(b.content[name], ep)
			continue
		}
		pending = append(pending, ep)
	}
	for _, ep := range pending {
		name := b.roomy(service, f)
		b.content[name] = append(b.content[name], ep)
	}
	return b
}

// roomy returns the first slice with room, adding one if none has.
func (b *buckets) roomy(service string, f family) string {
	for _, name := range b.order {
		if len(b.content[name]) < MaxEndpointsPerSlice {
			return name
		}
	}
	for i := 1; ; i++ {
		name := SliceName(service, f.suffix, i)
		if !slices.Contains(b.order, name) {
			b.order = append(b.order, name)
			b.added = append(b.added, name)
			return name
		}
	}
}

// SliceName is the name of the n-th (from 1) slice of a family of a
// Service: <service>-ipv4, <service>-ipv4-2, ...
func SliceName(service, suffix string, n int) string {
	if n == 1 {
		return service + "-" + suffix
	}
	return fmt.Sprintf("%s-%s-%d", service, suffix, n)
}

// build sets the controller's fields of s (labels, annotation, owner,
// address type, endpoints) for the endpoints eps, sorted by identifier,
// keeping whatever else s holds.
func build(s *discoveryv1.EndpointSlice, svc *corev1.Service, f family, eps []Endpoint) *discoveryv1.EndpointSlice {
	slices.SortFunc(eps, func(a, b Endpoint) int { return cmp.Compare(a.ID, b.ID) })
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[kube.LabelServiceName] = svc.Name
	s.Labels[kube.LabelEndpointSliceManagedBy] = kube.EndpointSliceManager
	ids := make(map[string]int, len(eps))
	s.Endpoints = make([]discoveryv1.Endpoint, 0, len(eps))
	for _, ep := range eps {
		addr := f.addr(ep.Addrs).String()
		ids[addr] = ep.ID
		e := discoveryv1.Endpoint{
			Addresses: []string{addr},
			Conditions: discoveryv1.EndpointConditions{
				Ready: ptr.To(ep.Ready), Serving: ptr.To(ep.Serving), Terminating: ptr.To(ep.Terminating),
			},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ep.Pod.Namespace, Name: ep.Pod.Name, UID: ep.Pod.UID},
		}
		if n := ep.Pod.Spec.NodeName; n != "" {
			e.NodeName = ptr.To(n)
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	annotation, _ := json.Marshal(ids) // map[string]int always marshals; keys sorted
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[kube.AnnotationEndpointIdentifiers] = string(annotation)
	s.AddressType = f.typ
	s.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: ptr.To(true),
	}}
	return s
}
