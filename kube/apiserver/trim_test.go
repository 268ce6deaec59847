package apiserver

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/kube/translate"
)

// applied returns meta as kubectl apply leaves it: the last-applied copy of
// the object and a managedFields entry.
func applied(name string, annotations map[string]string, object any) metav1.ObjectMeta {
	copyJSON, _ := json.Marshal(object)
	a := map[string]string{lastAppliedAnnotation: string(copyJSON)}
	for k, v := range annotations {
		a[k] = v
	}
	fields := `{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{},"f:meridio-experiment/endpoint-identifiers":{}},"f:labels":{".":{},"f:kubernetes.io/service-name":{}}},"f:addressType":{},"f:endpoints":{}}`
	return metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: a,
		Labels: map[string]string{"kubernetes.io/service-name": "service-a"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "discovery.k8s.io/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}}}
}

// TestTrimForCacheKeepsWhatTheTranslatorReads: the trimmed objects
// translate exactly like the originals, and are much smaller.
func TestTrimForCacheKeepsWhatTheTranslatorReads(t *testing.T) {
	var objs manifest.Objects
	if err := objs.AddFile("seed", []byte(seedObjects)); err != nil {
		t.Fatal(err)
	}
	snap, err := objs.Snapshot("sllb-a")
	if err != nil {
		t.Fatal(err)
	}
	want, wantProblems, _ := translate.Translate(snap)
	for _, s := range snap.EndpointSlices {
		s.ObjectMeta = applied(s.Name, s.Annotations, s)
	}
	svc := snap.Services[0]
	svc.ObjectMeta = applied(svc.Name, svc.Annotations, svc)
	svc.Labels = map[string]string{"service.kubernetes.io/service-proxy-name": "sllb-a"}
	svc.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80}}
	before := jsonSize(t, snap)
	for _, o := range []any{snap.Gateway, svc, snap.EndpointSlices[0], snap.EndpointSlices[1], snap.Routes[0], snap.Routers[0]} {
		if _, err := trimForCache(o); err != nil {
			t.Fatal(err)
		}
	}
	after := jsonSize(t, snap)
	got, gotProblems, _ := translate.Translate(snap)
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) || len(gotProblems) != len(wantProblems) {
		t.Errorf("the trimmed objects translate to\n%s\nnot\n%s", gotJSON, wantJSON)
	}
	es := snap.EndpointSlices[0]
	if es.ManagedFields != nil || es.Annotations[lastAppliedAnnotation] != "" || es.Annotations["meridio-experiment/endpoint-identifiers"] == "" {
		t.Errorf("trimmed EndpointSlice meta %+v: want no managedFields nor last-applied copy, the identifiers kept", es.ObjectMeta)
	}
	if after*2 > before {
		t.Errorf("the objects take %d bytes as JSON, %d trimmed: want less than half", before, after)
	}
	t.Logf("objects as JSON: %d bytes, trimmed %d", before, after)
	if got, _ := trimForCache(cache.DeletedFinalStateUnknown{Key: "x"}); got == nil {
		t.Error("a tombstone was lost")
	}
}

func jsonSize(t *testing.T, snap translate.Snapshot) int {
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// seedObjects are the seed's Gateway, Service, EndpointSlices, L34Route and
// GatewayRouter, as in deploy/examples.
var seedObjects = strings.Join([]string{`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: sllb-a}
spec:
  gatewayClassName: meridio-experiment-stateless-load-balancer
  listeners: [{name: all, port: 4000, protocol: TCP}]
  infrastructure:
    annotations:
      meridio-experiment/networks: '[{"name":"macvlan-nad-1","interface":"net1"}]'
      meridio-experiment/network-subnets: '["169.111.100.0/24","fd00:111::/64"]'`, `apiVersion: v1
kind: Service
metadata:
  name: service-a
  labels: {service.kubernetes.io/service-proxy-name: sllb-a}
spec: {clusterIP: None}`, `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: service-a-ipv4
  labels: {kubernetes.io/service-name: service-a}
  annotations: {meridio-experiment/endpoint-identifiers: '{"169.111.100.11":0,"169.111.100.12":1}'}
addressType: IPv4
endpoints: [{addresses: [169.111.100.11]}, {addresses: [169.111.100.12]}]`, `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: service-a-ipv6
  labels: {kubernetes.io/service-name: service-a}
  annotations: {meridio-experiment/endpoint-identifiers: '{"fd00:111::11":0}'}
addressType: IPv6
endpoints: [{addresses: ["fd00:111::11"]}]`, `apiVersion: meridio.experiment.gateway.api.poc/v1alpha1
kind: L34Route
metadata: {name: web}
spec: {parentRefs: [{name: sllb-a}], backendRefs: [{name: service-a, port: 1}], priority: 1, destinationCIDRs: [20.0.0.1/32], protocols: [TCP]}`,
	`apiVersion: meridio.experiment.gateway.api.poc/v1alpha1
kind: GatewayRouter
metadata:
  name: gw
  labels: {service.kubernetes.io/service-proxy-name: sllb-a}
spec: {address: 169.254.100.150, interface: vlan-100, bgp: {localASN: 8103, remoteASN: 4248829953}}`}, "\n---\n")
