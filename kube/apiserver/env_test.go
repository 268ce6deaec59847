package apiserver_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/kube/apiserver"
	"github.com/sllbrd/sllbrd/kube/manifest"
)

const (
	deployDir   = "../../deploy"
	gatewayName = "sllb-a"
	// waitTimeout bounds every wait for an eventual condition, generously:
	// the suite runs on a loaded 2-core machine beside the lab tests.
	waitTimeout = 60 * time.Second
)

var (
	l34RouteGVR      = schema.GroupVersionResource{Group: "meridio.experiment.gateway.api.poc", Version: "v1alpha1", Resource: "l34routes"}
	gatewayRouterGVR = schema.GroupVersionResource{Group: "meridio.experiment.gateway.api.poc", Version: "v1alpha1", Resource: "gatewayrouters"}
)

// env is a control plane with the CRDs, a namespace, deploy/rbac applied in
// it, and the sllbrd ServiceAccount's credentials.
type env struct {
	t      *testing.T
	ctx    context.Context
	cp     *kubetest.ControlPlane
	kube   kubernetes.Interface
	client *kubetest.Client
	ns     string
	sllbrd *rest.Config // the ServiceAccount bound by deploy/rbac
}

func newEnv(t *testing.T, ns string) *env {
	t.Helper()
	sa := kubetest.ServiceAccount(ns, "sllbrd")
	cp := kubetest.Start(t, sa)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, cp: cp, ns: ns, sllbrd: cp.Config(sa.Name)}
	e.kube = kubernetes.NewForConfigOrDie(cp.AdminConfig())
	var err error
	if e.client, err = kubetest.NewClient(cp.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	crds, _ := filepath.Glob(filepath.Join(deployDir, "crds", "*.yaml"))
	gatewayCRDs, err := kubetest.GatewayAPICRDs()
	if err != nil {
		t.Fatal(err)
	}
	crds = append(crds, gatewayCRDs...)
	if err := e.client.InstallCRDs(ctx, crds...); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
	rbac, _ := filepath.Glob(filepath.Join(deployDir, "rbac", "*.yaml"))
	e.createFiles(rbac...)
	return e
}

// createFiles creates every object of the files in the namespace.
func (e *env) createFiles(paths ...string) {
	e.t.Helper()
	objs, err := kubetest.ReadObjects(paths...)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, o := range objs {
		if _, err := e.client.Create(e.ctx, e.ns, o); err != nil {
			e.t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// createExamples creates deploy/examples in the namespace.
func (e *env) createExamples() {
	e.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(deployDir, "examples", "*.yaml"))
	e.createFiles(paths...)
}

// custom returns the dynamic client of a custom resource in the namespace.
func (e *env) custom(gvr schema.GroupVersionResource) dynamic.ResourceInterface {
	return e.client.Dynamic.Resource(gvr).Namespace(e.ns)
}

// exampleObject returns the object named name from a deploy/examples file.
func exampleObject(t *testing.T, file, name string) *unstructured.Unstructured {
	t.Helper()
	objs, err := kubetest.ReadObjects(filepath.Join(deployDir, "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s in %s", name, file)
	return nil
}

// running is a Source under test and what it emitted.
type running struct {
	src     *apiserver.Source
	updates chan manifest.Update
}

// startSource runs a Source as the sllbrd ServiceAccount until the test ends.
func (e *env) startSource(opts ...apiserver.Option) *running {
	e.t.Helper()
	return e.startSourceWith(e.sllbrd, opts...)
}

// startSourceWith runs a Source with cfg until the test ends.
func (e *env) startSourceWith(cfg *rest.Config, opts ...apiserver.Option) *running {
	e.t.Helper()
	src, err := apiserver.NewSource(cfg, e.ns, gatewayName, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{src: src, updates: make(chan manifest.Update, 1000)}
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, func(u manifest.Update) { r.updates <- u }) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("Run: %v", err)
		}
	})
	return r
}

// waitUpdate returns the first Update that satisfies ok.
func (r *running) waitUpdate(t *testing.T, what string, ok func(manifest.Update) bool) manifest.Update {
	t.Helper()
	timeout := time.After(waitTimeout)
	var last manifest.Update
	for {
		select {
		case u := <-r.updates:
			if ok(u) {
				return u
			}
			last = u
		case <-timeout:
			t.Fatalf("no Update with %s within %v; last: state %+v problems %v err %v",
				what, waitTimeout, last.State, last.Problems, last.Err)
		}
	}
}

// noUpdate fails if an Update arrives within d.
func (r *running) noUpdate(t *testing.T, d time.Duration, why string) {
	t.Helper()
	select {
	case u := <-r.updates:
		t.Errorf("unexpected Update (%s): generation %d problems %v err %v", why, generation(u), u.Problems, u.Err)
	case <-time.After(d):
	}
}

// waitReady waits until Ready reports want and returns its reason.
func (r *running) waitReady(t *testing.T, want bool, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := r.src.Ready()
		if ok == want {
			return why
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ready() = %v (%s), want %v within %v", ok, why, want, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func generation(u manifest.Update) uint64 {
	if u.State == nil {
		return 0
	}
	return u.State.Generation
}

var gatewayGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
