package sllbr

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
)

// Keys of the template ConfigMap and of what Render writes.
const (
	// TemplateKey holds the Deployment template in the template ConfigMap.
	TemplateKey = "deployment.yaml"
	// ContainerName is the template's container that runs sllbrd.
	ContainerName = "sllbrd"
	// AnnotationHash on the Deployment is the hash of what Render made.
	AnnotationHash = "meridio-experiment/sllbr-hash"
	// ManagedBy is the app.kubernetes.io/managed-by label of the Deployment.
	ManagedBy = "sllbrd-controller"

	labelInstance  = "app.kubernetes.io/instance"
	labelManagedBy = "app.kubernetes.io/managed-by"
)

// ParseTemplate decodes a Deployment template (YAML or JSON) strictly and
// checks that it has a container named sllbrd.
func ParseTemplate(data []byte) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		return nil, fmt.Errorf("not a Deployment: %w", err)
	}
	if d.APIVersion != "apps/v1" || d.Kind != "Deployment" {
		return nil, fmt.Errorf("apiVersion %q kind %q, want apps/v1 Deployment", d.APIVersion, d.Kind)
	}
	if d.Name == "" {
		return nil, errors.New("metadata.name is empty")
	}
	if container(&d) == nil {
		return nil, fmt.Errorf("no container named %q", ContainerName)
	}
	return &d, nil
}

// Selector returns the labels that select the SLLBR pods of a Gateway.
func Selector(gateway string) map[string]string {
	return map[string]string{kube.LabelComponent: kube.ComponentSLLBR, kube.LabelGatewayName: gateway}
}

// Name returns the name of a Gateway's Deployment made from tmpl.
func Name(tmpl *appsv1.Deployment, gateway string) string {
	prefix := tmpl.Name
	if inst := tmpl.Labels[labelInstance]; inst != "" && strings.HasSuffix(prefix, "-"+inst) {
		prefix = strings.TrimSuffix(prefix, "-"+inst)
	}
	return prefix + "-" + gateway
}

// Render returns the Deployment of gw made from tmpl and p (see the package
// documentation); tmpl is not modified.
func Render(tmpl *appsv1.Deployment, gw *gatewayv1.Gateway, p Parameters) *appsv1.Deployment {
	d := tmpl.DeepCopy()
	var infraLabels, infraAnnotations map[string]string
	if inf := gw.Spec.Infrastructure; inf != nil {
		infraLabels = stringMap(inf.Labels)
		infraAnnotations = stringMap(inf.Annotations)
	}
	ours := Selector(gw.Name)
	ours[labelInstance] = gw.Name
	ours[labelManagedBy] = ManagedBy
	labels := merged(tmpl.Labels, infraLabels, ours)
	annotations := merged(withoutNetworks(tmpl.Annotations), infraAnnotations)
	d.ObjectMeta = metav1.ObjectMeta{
		Name: Name(tmpl, gw.Name), Namespace: gw.Namespace, Labels: labels, Annotations: annotations,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: gatewayv1.GroupVersion.String(), Kind: "Gateway", Name: gw.Name, UID: gw.UID, Controller: ptr.To(true),
		}},
	}
	d.Status = appsv1.DeploymentStatus{}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: Selector(gw.Name)}
	pod := &d.Spec.Template
	pod.Labels = merged(pod.Labels, infraLabels, ours)
	pod.Annotations = merged(withoutNetworks(pod.Annotations), infraAnnotations)
	retargetSelectors(&pod.Spec, gw.Name)
	c := container(d)
	c.Args = withGateway(c.Args, gw.Name)
	if r := p.ContainerResources(); r != nil {
		c.Resources = *r
	}
	if p.Replicas != nil {
		d.Spec.Replicas = ptr.To(*p.Replicas)
	}
	d.Annotations[AnnotationHash] = hash(d)
	return d
}

// hash identifies the rendered Deployment (metadata and spec).
func hash(d *appsv1.Deployment) string {
	b, _ := json.Marshal(struct { // marshalling API types does not fail
		Labels, Annotations map[string]string
		Owners              []metav1.OwnerReference
		Spec                appsv1.DeploymentSpec
	}{d.Labels, d.Annotations, d.OwnerReferences, d.Spec})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

func container(d *appsv1.Deployment) *corev1.Container {
	cs := d.Spec.Template.Spec.Containers
	if i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == ContainerName }); i >= 0 {
		return &cs[i]
	}
	return nil
}

// withGateway replaces every --gateway argument by --gateway=<gateway>.
func withGateway(args []string, gateway string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--gateway" || a == "-gateway":
			i++ // its value is the next argument
			continue
		case strings.HasPrefix(a, "--gateway=") || strings.HasPrefix(a, "-gateway="):
			continue
		}
		out = append(out, a)
	}
	return append([]string{"--gateway=" + gateway}, out...)
}

// retargetSelectors points the instance label of the pods' affinity and
// spread selectors at the Gateway.
func retargetSelectors(spec *corev1.PodSpec, gateway string) {
	var selectors []*metav1.LabelSelector
	if a := spec.Affinity; a != nil {
		for _, terms := range [][]corev1.PodAffinityTerm{affinityTerms(a.PodAffinity), antiAffinityTerms(a.PodAntiAffinity)} {
			for i := range terms {
				selectors = append(selectors, terms[i].LabelSelector)
			}
		}
		selectors = append(selectors, weightedSelectors(a)...)
	}
	for i := range spec.TopologySpreadConstraints {
		selectors = append(selectors, spec.TopologySpreadConstraints[i].LabelSelector)
	}
	for _, s := range selectors {
		if s != nil {
			if _, ok := s.MatchLabels[labelInstance]; ok {
				s.MatchLabels[labelInstance] = gateway
			}
		}
	}
}

func affinityTerms(a *corev1.PodAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.RequiredDuringSchedulingIgnoredDuringExecution
}

func antiAffinityTerms(a *corev1.PodAntiAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.RequiredDuringSchedulingIgnoredDuringExecution
}

func weightedSelectors(a *corev1.Affinity) []*metav1.LabelSelector {
	var weighted []corev1.WeightedPodAffinityTerm
	if a.PodAffinity != nil {
		weighted = append(weighted, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	var out []*metav1.LabelSelector
	for i := range weighted {
		out = append(out, weighted[i].PodAffinityTerm.LabelSelector)
	}
	if a.PodAntiAffinity != nil {
		anti := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		for i := range anti {
			out = append(out, anti[i].PodAffinityTerm.LabelSelector)
		}
	}
	return out
}

// merged returns the union of the maps, later ones winning; never nil.
func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

func withoutNetworks(m map[string]string) map[string]string {
	out := maps.Clone(m)
	delete(out, kube.AnnotationMultusNetworks)
	return out
}

func stringMap[K, V ~string](m map[K]V) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[string(k)] = string(v)
	}
	return out
}
