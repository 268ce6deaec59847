package sllbr

import (
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
)

// seedParameters is the seed's SLLBRConfig ("Gateway Configuration").
const seedParameters = `apiVersion: meridio.experiment.gateway.api.poc/v1alpha1
kind: SLLBRConfig
replicas: 2
sllb:
  resources:
    requests:
      memory: "64Mi"
      cpu: "250m"
    limits:
      memory: "128Mi"
      cpu: "500m"
router:
  resources:
    requests:
      memory: "64Mi"
      cpu: "250m"
    limits:
      memory: "128Mi"
      cpu: "500m"`

func template(t *testing.T) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile("../../../deploy/sllbrd/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseTemplate(data)
	if err != nil {
		t.Fatalf("deploy/sllbrd/deployment.yaml is not a valid template: %v", err)
	}
	return d
}

func gateway() *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "sllb-b", Namespace: "tenant-b", UID: "gw-uid"},
		Spec: gatewayv1.GatewaySpec{Infrastructure: &gatewayv1.GatewayInfrastructure{
			Labels: map[gatewayv1.LabelKey]gatewayv1.LabelValue{"team": "blue"},
			Annotations: map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue{
				kube.AnnotationMultusNetworks: `[{"name":"vlan-200","interface":"vlan-200"}]`,
				kube.AnnotationNetworks:       `[{"name":"nad-2","interface":"net2"}]`,
			},
		}},
	}
}

func TestRenderFromTheShippedTemplate(t *testing.T) {
	tmpl := template(t)
	before := tmpl.DeepCopy()
	p, err := ParseParameters(seedParameters)
	if err != nil {
		t.Fatalf("the seed's parameters: %v", err)
	}
	d := Render(tmpl, gateway(), p)
	if d.Name != "sllbrd-sllb-b" || d.Namespace != "tenant-b" {
		t.Errorf("name %s/%s", d.Namespace, d.Name)
	}
	if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Kind != "Gateway" || d.OwnerReferences[0].UID != "gw-uid" ||
		d.OwnerReferences[0].APIVersion != "gateway.networking.k8s.io/v1" || !*d.OwnerReferences[0].Controller {
		t.Errorf("owner %+v", d.OwnerReferences)
	}
	sel := d.Spec.Selector.MatchLabels
	if len(sel) != 2 || sel[kube.LabelGatewayName] != "sllb-b" || sel[kube.LabelComponent] != "sllbr" {
		t.Errorf("selector %v", sel)
	}
	for what, labels := range map[string]map[string]string{"deployment": d.Labels, "pod": d.Spec.Template.Labels} {
		for k, v := range map[string]string{"app.kubernetes.io/name": "sllbrd", "app.kubernetes.io/instance": "sllb-b",
			kube.LabelGatewayName: "sllb-b", kube.LabelComponent: "sllbr", "team": "blue", "app.kubernetes.io/managed-by": ManagedBy} {
			if labels[k] != v {
				t.Errorf("%s label %s = %q, want %q", what, k, labels[k], v)
			}
		}
	}
	pod := d.Spec.Template
	if got := pod.Annotations[kube.AnnotationMultusNetworks]; got != `[{"name":"vlan-200","interface":"vlan-200"}]` {
		t.Errorf("pod Multus networks %q, want the Gateway's", got)
	}
	anti := pod.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels
	if anti["app.kubernetes.io/instance"] != "sllb-b" {
		t.Errorf("anti-affinity selects %v", anti)
	}
	c := pod.Spec.Containers[0]
	if slices.Contains(c.Args, "--gateway=sllb-a") || c.Args[0] != "--gateway=sllb-b" || !slices.Contains(c.Args, "--drain=10s") {
		t.Errorf("args %v", c.Args)
	}
	want := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("256Mi")},
	}
	for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for name, q := range l {
			l[name] = resource.MustParse(q.String()) // canonical form for the comparison
		}
	}
	if c.Resources.String() != want.String() {
		t.Errorf("resources %v, want %v", c.Resources, want)
	}
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.ServiceAccountName != "sllbrd" || c.Image != container(tmpl).Image {
		t.Errorf("replicas %d, service account %q, image %q", *d.Spec.Replicas, d.Spec.Template.Spec.ServiceAccountName, c.Image)
	}
	if d.Annotations[AnnotationHash] == "" {
		t.Errorf("no hash annotation")
	}
	if !equality.Semantic.DeepEqual(tmpl, before) {
		t.Errorf("Render modified the template")
	}
}

func TestRenderHashFollowsInputs(t *testing.T) {
	tmpl := template(t)
	base := Render(tmpl, gateway(), Parameters{}).Annotations[AnnotationHash]
	if again := Render(tmpl, gateway(), Parameters{}).Annotations[AnnotationHash]; again != base {
		t.Errorf("hash not stable: %s then %s", base, again)
	}
	three := int32(3)
	if h := Render(tmpl, gateway(), Parameters{Replicas: &three}).Annotations[AnnotationHash]; h == base {
		t.Errorf("replicas do not change the hash")
	}
	gw := gateway()
	gw.Spec.Infrastructure.Annotations[kube.AnnotationMultusNetworks] = `[{"name":"vlan-300"}]`
	if h := Render(tmpl, gw, Parameters{}).Annotations[AnnotationHash]; h == base {
		t.Errorf("the Gateway's networks do not change the hash")
	}
	edited := tmpl.DeepCopy()
	edited.Spec.Template.Spec.Containers[0].Image = "example.org/sllbrd:v2"
	if h := Render(edited, gateway(), Parameters{}).Annotations[AnnotationHash]; h == base {
		t.Errorf("the template's image does not change the hash")
	}
	if d := Render(tmpl, gateway(), Parameters{}); *d.Spec.Replicas != *tmpl.Spec.Replicas {
		t.Errorf("without parameters replicas %d, want the template's %d", *d.Spec.Replicas, *tmpl.Spec.Replicas)
	}
}

func TestRenderWithoutGatewayNetworks(t *testing.T) {
	gw := gateway()
	gw.Spec.Infrastructure = nil
	d := Render(template(t), gw, Parameters{})
	if _, ok := d.Spec.Template.Annotations[kube.AnnotationMultusNetworks]; ok {
		t.Errorf("the template's Multus networks (sllb-a's) were kept for a Gateway without any")
	}
}

func TestWithGateway(t *testing.T) {
	got := withGateway([]string{"--gateway", "x", "--queues=2", "-gateway=y", "--drain=1s"}, "gw")
	if want := []string{"--gateway=gw", "--queues=2", "--drain=1s"}; !slices.Equal(got, want) {
		t.Errorf("args %v, want %v", got, want)
	}
}

func TestName(t *testing.T) {
	tmpl := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "lb", Labels: map[string]string{"app.kubernetes.io/instance": "x"}}}
	if got := Name(tmpl, "gw"); got != "lb-gw" {
		t.Errorf("Name = %s", got)
	}
}

func TestParseTemplateErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"not YAML", "{", "not a Deployment"},
		{"unknown field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicaz: 1}", "unknown field"},
		{"another kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}", "want apps/v1 Deployment"},
		{"no sllbrd container", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: lb}]}}}", `no container named "sllbrd"`},
	} {
		if _, err := ParseTemplate([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestParseParameters(t *testing.T) {
	head := "apiVersion: meridio.experiment.gateway.api.poc/v1alpha1\nkind: SLLBRConfig\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"wrong kind", "apiVersion: v1\nkind: ConfigMap\n", "want meridio.experiment.gateway.api.poc/v1alpha1 SLLBRConfig"},
		{"unknown field", head + "nodeSelector: {a: b}\n", "unknown field"},
		{"negative replicas", head + "replicas: -1\n", "replicas -1 is not in 0..64"},
		{"too many replicas", head + "replicas: 65\n", "replicas 65"},
		{"request over limit", head + "resources: {requests: {cpu: 2}, limits: {cpu: 1}}\n", "cpu request 2 exceeds the limit 1"},
		{"bad quantity", head + "resources: {requests: {cpu: lots}}\n", "quantities must match"},
		{"both forms", head + "resources: {}\nsllb: {resources: {}}\n", "exclusive"},
		{"negative", head + "sllb: {resources: {requests: {memory: -1Mi}}}\n", "sllb.resources: memory -1Mi is negative"},
	} {
		if _, err := ParseParameters(tc.doc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	p, err := ParseParameters(head + "replicas: 0\nresources: {requests: {cpu: 100m}}\n")
	if err != nil || *p.Replicas != 0 || p.ContainerResources().Requests.Cpu().String() != "100m" {
		t.Errorf("direct resources: %+v, %v", p, err)
	}
	p, err = ParseParameters(head + "sllb: {resources: {requests: {cpu: 100m}, limits: {cpu: 1, memory: 1Gi}}}\nrouter: {resources: {limits: {cpu: 1}}}\n")
	r := p.ContainerResources()
	if err != nil || r.Requests.Cpu().String() != "100m" || r.Limits.Cpu().String() != "2" || r.Limits.Memory().Value() != 0 {
		t.Errorf("a limit only one part sets must not be set: %+v, %v", r, err)
	}
}
