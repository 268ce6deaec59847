package kubetest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// widgetCRD has two served versions and one that is not served.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.kubetest.sllbrd.example
spec:
  group: kubetest.sllbrd.example
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1beta1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1alpha1
    served: false
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

var (
	widgetV1      = schema.GroupVersionKind{Group: "kubetest.sllbrd.example", Version: "v1", Kind: "Widget"}
	widgetV1beta1 = schema.GroupVersionKind{Group: "kubetest.sllbrd.example", Version: "v1beta1", Kind: "Widget"}
	gadgetV1      = schema.GroupVersionKind{Group: "kubetest.sllbrd.example", Version: "v1", Kind: "Gadget"}
)

func TestServedKinds(t *testing.T) {
	objs, err := DecodeObjects([]byte(widgetCRD))
	if err != nil {
		t.Fatal(err)
	}
	got := servedKinds(objs)
	if want := []schema.GroupVersionKind{widgetV1, widgetV1beta1}; !slices.Equal(got, want) {
		t.Errorf("servedKinds = %v, want %v", got, want)
	}
}

// lateMapper maps a kind only after it was reset listedAfter[kind] times,
// like a discovery-based mapper while the API server has not yet listed the
// kind (a kind missing from listedAfter is never listed).
type lateMapper struct {
	meta.RESTMapper
	listedAfter map[schema.GroupVersionKind]int
	resets      int
}

func (m *lateMapper) Reset() { m.resets++ }

func (m *lateMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	gvk := gk.WithVersion(versions[0])
	if n, ok := m.listedAfter[gvk]; !ok || m.resets < n {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

func newLateMapper(listedAfter map[schema.GroupVersionKind]int) *lateMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{widgetV1, widgetV1beta1, gadgetV1} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return &lateMapper{RESTMapper: m, listedAfter: listedAfter}
}

// TestWaitMapped: waitMapped resets the mapper until it maps every kind.
func TestWaitMapped(t *testing.T) {
	m := newLateMapper(map[schema.GroupVersionKind]int{widgetV1: 1, widgetV1beta1: 4, gadgetV1: 2})
	err := waitMapped(context.Background(), m, []schema.GroupVersionKind{widgetV1, widgetV1beta1, gadgetV1}, time.Millisecond, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.resets != 4 {
		t.Errorf("%d resets, want 4 (one before each try, until the last kind is listed)", m.resets)
	}
}

// TestWaitMappedTimeout: the error names the kinds still not mapped, only
// them, once the timeout or ctx ends the wait.
func TestWaitMappedTimeout(t *testing.T) {
	want := []schema.GroupVersionKind{widgetV1, widgetV1beta1, gadgetV1}
	check := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("waitMapped succeeded, want an error")
		}
		t.Log(err)
		if !wait.Interrupted(err) {
			t.Errorf("error %q does not wrap the end of the wait", err)
		}
		msg := err.Error()
		for _, s := range []string{"Widget kubetest.sllbrd.example/v1beta1", "Gadget kubetest.sllbrd.example/v1"} {
			if !strings.Contains(msg, s) {
				t.Errorf("error %q does not name %s", msg, s)
			}
		}
		if strings.Contains(msg, "Widget kubetest.sllbrd.example/v1,") || strings.Contains(msg, "Widget kubetest.sllbrd.example/v1 ") {
			t.Errorf("error %q names Widget v1, which was mapped", msg)
		}
	}
	t.Run("timeout", func(t *testing.T) {
		m := newLateMapper(map[schema.GroupVersionKind]int{widgetV1: 1})
		check(t, waitMapped(context.Background(), m, want, time.Millisecond, 100*time.Millisecond))
	})
	t.Run("ctx", func(t *testing.T) {
		m := newLateMapper(map[schema.GroupVersionKind]int{widgetV1: 1})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		check(t, waitMapped(ctx, m, want, time.Millisecond, time.Hour))
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("waitMapped returned %v after ctx ended", d)
		}
	})
}

// TestIntegrationInstallCRDs: once InstallCRDs returns, the Client's mapper
// maps every served version of the CRD's kind without another discovery
// (also when it had cached discovery from before the CRD existed), and
// objects of those versions can be created.
func TestIntegrationInstallCRDs(t *testing.T) {
	cp := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := NewClient(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "sllbrd-test-crds"
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	// Fill the mapper's discovery cache before the CRD exists.
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetName("before-crds")
	if _, err := c.Create(ctx, ns, cm); err != nil {
		t.Fatalf("create ConfigMap: %v", err)
	}
	path := filepath.Join(t.TempDir(), "widgets.yaml")
	if err := os.WriteFile(path, []byte(widgetCRD), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.InstallCRDs(ctx, path); err != nil {
		t.Fatalf("InstallCRDs: %v", err)
	}
	for _, gvk := range []schema.GroupVersionKind{widgetV1, widgetV1beta1} {
		if _, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			t.Errorf("%v not mapped after InstallCRDs: %v", gvk, err)
		}
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(gvk)
		w.SetName("widget-" + gvk.Version)
		if _, err := c.Create(ctx, ns, w); err != nil {
			t.Errorf("create %v: %v", gvk, err)
		}
	}
	// InstallCRDs did not wait for the version that is not served (it
	// would have failed after discoveryTimeout).
	if _, err := c.mapper.RESTMapping(widgetV1.GroupKind(), "v1alpha1"); !meta.IsNoMatchError(err) {
		t.Errorf("Widget v1alpha1 (not served) mapped, or not a no-match error: %v", err)
	}
}
