package deploy

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/sllbrd/sllbrd/kube"
)

// TestTargetApplicationExample pins the example application's sidecar to
// docs/target.md: `sllbrd target` with NET_ADMIN only, the pod marked as a
// sidecar's (meridio-experiment/target-agent), its pod from the downward
// API, readiness on /readyz, a Role of get, watch and patch on pods bound
// to the Deployment's ServiceAccount, that ServiceAccount
// listed for deploy/admission's policy, and its token mounted in the
// sidecar only. The lab test of cmd/sllbrd runs `sllbrd target` with
// exactly this Role.
func TestTargetApplicationExample(t *testing.T) {
	docs := documents(t, "examples/target-application.yaml")
	if len(docs) != 5 {
		t.Fatalf("%d documents, want ServiceAccount, Role, RoleBinding, ConfigMap, Deployment", len(docs))
	}
	var sa corev1.ServiceAccount
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	var params corev1.ConfigMap
	var d appsv1.Deployment
	for i, out := range []any{&sa, &role, &binding, &params, &d} {
		if err := yaml.UnmarshalStrict(docs[i], out); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
	}
	checkGrants(t, "Role "+role.Name, grants(role.Rules), map[string][]string{"/pods": {"get", "watch", "patch"}})
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != sa.Name {
		t.Errorf("RoleBinding %+v", binding)
	}
	if _, listed := params.Data[sa.Name]; params.Labels[targetParamsLabel] != "true" || !listed || len(params.Data) != 1 {
		t.Errorf("ConfigMap %s (labels %v, keys of %v): want %s=true listing %s only", params.Name, params.Labels, params.Data, targetParamsLabel, sa.Name)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name {
		t.Errorf("service account %q", pod.ServiceAccountName)
	}
	checkTokenInSidecarOnly(t, pod)
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
	if a := d.Spec.Template.Annotations[kube.AnnotationTargetAgent]; a != kube.TargetAgentSidecar {
		t.Errorf("pod annotation %s %q, want %q: without it the node daemon is the pod's agent and the sidecar applies nothing",
			kube.AnnotationTargetAgent, a, kube.TargetAgentSidecar)
	}
	if d.Spec.Template.Labels["app"] != "example-target-application-multi" {
		t.Errorf("the seed's service-a selects app=example-target-application-multi; labels %v", d.Spec.Template.Labels)
	}
}

// tokenPath is where the in-cluster configuration reads the
// ServiceAccount's token and CA.
const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// checkTokenInSidecarOnly checks that pod mounts no token automatically
// and mounts a projected ServiceAccount token at tokenPath in the
// sllbrd-target container only.
func checkTokenInSidecarOnly(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken %v: the token would be in every container", pod.AutomountServiceAccountToken)
	}
	tokenVolumes := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil && src.ServiceAccountToken.Path == "token" && src.ServiceAccountToken.Audience == "" {
				tokenVolumes[v.Name] = true
			}
		}
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return tokenVolumes[m.Name] && m.MountPath == tokenPath })
		if mounted != (c.Name == "sllbrd-target") {
			t.Errorf("container %s: the ServiceAccount token mounted at %s: %v", c.Name, tokenPath, mounted)
		}
	}
}
