package kubetest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestIntegrationControlPlane starts the control plane, writes an object,
// restarts kube-apiserver and reads the object back through the same URL.
func TestIntegrationControlPlane(t *testing.T) {
	cp := Start(t, User{Name: "nobody"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sllbrd-test-cp"}}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	nobody := kubernetes.NewForConfigOrDie(cp.Config("nobody"))
	if _, err := nobody.CoreV1().Services("sllbrd-test-cp").List(ctx, metav1.ListOptions{}); err == nil {
		t.Errorf("a user without RBAC grants listed Services")
	}
	cp.StopAPIServer()
	if _, err := admin.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err == nil {
		t.Fatalf("namespace read while kube-apiserver is stopped")
	}
	cp.StartAPIServer()
	if _, err := admin.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace lost across the kube-apiserver restart: %v", err)
	}
}
