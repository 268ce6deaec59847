package apiserver_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/model"
)

// routerIn returns the router name (namespace/name) of u's state, or nil.
func routerIn(u manifest.Update, name string) *model.Router {
	if u.State == nil {
		return nil
	}
	for i := range u.State.Routers {
		if u.State.Routers[i].Name == name {
			return &u.State.Routers[i]
		}
	}
	return nil
}

// TestIntegrationPasswordSecret: the source, with deploy/rbac's grants,
// reads a GatewayRouter's TCP MD5 password from the Secret it names and
// follows a rotation of that Secret; the ServiceAccount can read no other
// Secret (a list without the name's field selector, or a get of another
// Secret, is forbidden), so a router naming another Secret is reported and
// left out.
func TestIntegrationPasswordSecret(t *testing.T) {
	e := newEnv(t, "sllbrd-test-secrets")
	e.createExamples()
	secrets := e.kube.CoreV1().Secrets(e.ns)
	for name, password := range map[string]string{"bgp-auth": "first-password", "other": "other-password"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"password": []byte(password)}}
		if _, err := secrets.Create(e.ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refer := func(router, secret string) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"bgp":{"passwordSecretRef":{"name":%q}}}}`, secret)
		if _, err := e.custom(gatewayRouterGVR).Patch(e.ctx, router, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refer("gateway-a-v4", "bgp-auth")
	r := e.startSource()
	v4 := e.ns + "/gateway-a-v4"
	r.waitUpdate(t, "gateway-a-v4 with the password of Secret bgp-auth", func(u manifest.Update) bool {
		rt := routerIn(u, v4)
		return rt != nil && rt.BGP.Password.Reveal() == "first-password"
	})

	rotated := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bgp-auth"}, Data: map[string][]byte{"password": []byte("second-password")}}
	if _, err := secrets.Update(e.ctx, rotated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitUpdate(t, "gateway-a-v4 with the rotated password", func(u manifest.Update) bool {
		rt := routerIn(u, v4)
		return rt != nil && rt.BGP.Password.Reveal() == "second-password"
	})

	sa := kubernetes.NewForConfigOrDie(e.sllbrd).CoreV1().Secrets(e.ns)
	if _, err := sa.List(e.ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount lists every Secret: %v, want forbidden", err)
	}
	if _, err := sa.Get(e.ctx, "other", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount reads Secret other: %v, want forbidden", err)
	}
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "bgp-auth").String()}
	if l, err := sa.List(e.ctx, byName); err != nil || len(l.Items) != 1 {
		t.Errorf("the ServiceAccount lists Secret bgp-auth by name: %v, %v; want it", l, err)
	}

	refer("gateway-a-v6", "other")
	u := r.waitUpdate(t, "a problem for gateway-a-v6", func(u manifest.Update) bool {
		for _, p := range u.Problems {
			if p.Name == "gateway-a-v6" && p.Field == "spec.bgp.passwordSecretRef" {
				return true
			}
		}
		return false
	})
	if routerIn(u, e.ns+"/gateway-a-v6") != nil || routerIn(u, v4) == nil {
		t.Errorf("routers %+v: want gateway-a-v6 left out, gateway-a-v4 kept", u.State.Routers)
	}
}
