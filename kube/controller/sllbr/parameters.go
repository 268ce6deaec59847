package sllbr

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
)

// ParametersKey is the key of the parameters in the ConfigMap named by a
// Gateway's spec.infrastructure.parametersRef (the seed's config.conf).
const ParametersKey = "config.conf"

// ParametersKind is the kind of the parameters document.
const ParametersKind = "SLLBRConfig"

// MaxReplicas bounds the replicas of the parameters.
const MaxReplicas = 64

// Parameters is the seed's SLLBRConfig: the SLLBR Deployment's replicas and
// resources. The seed sizes two containers, sllb and router; sllbrd is one
// container doing both, so their requests are added, and a limit is set
// where both set one (their sum). Resources sizes the one container
// directly instead.
type Parameters struct {
	APIVersion string                       `json:"apiVersion"`
	Kind       string                       `json:"kind"`
	Replicas   *int32                       `json:"replicas,omitempty"`
	Resources  *corev1.ResourceRequirements `json:"resources,omitempty"`
	SLLB       *Part                        `json:"sllb,omitempty"`
	Router     *Part                        `json:"router,omitempty"`
}

// Part sizes one of the seed's containers.
type Part struct {
	Resources corev1.ResourceRequirements `json:"resources"`
}

// ParseParameters decodes and checks a parameters document (YAML or JSON);
// unknown fields are errors.
func ParseParameters(text string) (Parameters, error) {
	var p Parameters
	if err := yaml.UnmarshalStrict([]byte(text), &p); err != nil {
		return Parameters{}, fmt.Errorf("not an %s: %w", ParametersKind, err)
	}
	var errs []error
	if p.APIVersion != v1alpha1.SchemeGroupVersion.String() || p.Kind != ParametersKind {
		errs = append(errs, fmt.Errorf("apiVersion %q kind %q, want %s %s",
			p.APIVersion, p.Kind, v1alpha1.SchemeGroupVersion, ParametersKind))
	}
	if r := p.Replicas; r != nil && (*r < 0 || *r > MaxReplicas) {
		errs = append(errs, fmt.Errorf("replicas %d is not in 0..%d", *r, MaxReplicas))
	}
	if p.Resources != nil && (p.SLLB != nil || p.Router != nil) {
		errs = append(errs, errors.New("resources and sllb/router are exclusive"))
	}
	for _, part := range []struct {
		name string
		r    *corev1.ResourceRequirements
	}{{"resources", p.Resources}, {"sllb.resources", p.SLLB.resources()}, {"router.resources", p.Router.resources()}} {
		if err := checkResources(part.r); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", part.name, err))
		}
	}
	if err := checkResources(p.ContainerResources()); err != nil {
		errs = append(errs, fmt.Errorf("sllb + router: %w", err))
	}
	return p, errors.Join(errs...)
}

func (p *Part) resources() *corev1.ResourceRequirements {
	if p == nil {
		return nil
	}
	return &p.Resources
}

// ContainerResources returns the resources of the sllbrd container, nil
// when the parameters give none.
func (p Parameters) ContainerResources() *corev1.ResourceRequirements {
	if p.Resources != nil {
		return p.Resources.DeepCopy()
	}
	var parts []*corev1.ResourceRequirements
	for _, r := range []*corev1.ResourceRequirements{p.SLLB.resources(), p.Router.resources()} {
		if r != nil {
			parts = append(parts, r)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	out := &corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, r := range parts {
		addTo(out.Requests, r.Requests)
	}
	for name := range parts[0].Limits {
		sum := resource.Quantity{}
		all := true
		for _, r := range parts {
			q, ok := r.Limits[name]
			all = all && ok
			sum.Add(q)
		}
		if all {
			out.Limits[name] = sum
		}
	}
	if len(out.Limits) == 0 {
		out.Limits = nil
	}
	if len(out.Requests) == 0 {
		out.Requests = nil
	}
	return out
}

func addTo(dst, src corev1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

// checkResources rejects negative quantities and requests above limits
// (the API server would refuse the Deployment).
func checkResources(r *corev1.ResourceRequirements) error {
	if r == nil {
		return nil
	}
	var errs []error
	for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
		for _, name := range slices.Sorted(maps.Keys(l)) {
			if q := l[name]; q.Sign() < 0 {
				errs = append(errs, fmt.Errorf("%s %s is negative", name, q.String()))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		req := r.Requests[name]
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, fmt.Errorf("%s request %s exceeds the limit %s", name, req.String(), lim.String()))
		}
	}
	return errors.Join(errs...)
}
