package deploy

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestTargetApplicationExample pins the example application's sidecar to
// docs/target.md: `sllbrd target` with NET_ADMIN only, its pod from the
// downward API, readiness on /readyz, and a Role of get, watch and patch on
// pods bound to the Deployment's ServiceAccount. The lab test of
// cmd/sllbrd runs `sllbrd target` with exactly this Role.
func TestTargetApplicationExample(t *testing.T) {
	docs := documents(t, "examples/target-application.yaml")
	if len(docs) != 4 {
		t.Fatalf("%d documents, want ServiceAccount, Role, RoleBinding, Deployment", len(docs))
	}
	var sa corev1.ServiceAccount
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	var d appsv1.Deployment
	for i, out := range []any{&sa, &role, &binding, &d} {
		if err := yaml.UnmarshalStrict(docs[i], out); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
	}
	checkGrants(t, "Role "+role.Name, grants(role.Rules), map[string][]string{"/pods": {"get", "watch", "patch"}})
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != sa.Name {
		t.Errorf("RoleBinding %+v", binding)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name {
		t.Errorf("service account %q", pod.ServiceAccountName)
	}
	if sc := pod.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v, want the RuntimeDefault seccomp profile", sc)
	}
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "sllbrd-target" })
	if i < 0 {
		t.Fatal("no sllbrd-target container")
	}
	c := pod.Containers[i]
	if len(c.Args) == 0 || c.Args[0] != "target" {
		t.Errorf("args %v", c.Args)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("downward API %v", env)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN"}) ||
		sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("security context %+v", sc)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %+v", c.ReadinessProbe)
	}
	if d.Spec.Template.Labels["app"] != "example-target-application-multi" {
		t.Errorf("the seed's service-a selects app=example-target-application-multi; labels %v", d.Spec.Template.Labels)
	}
}
