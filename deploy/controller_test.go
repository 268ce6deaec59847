package deploy

import (
	"bytes"
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// grants flattens RBAC rules to "group/resource" -> sorted verbs.
func grants(rules []rbacv1.PolicyRule) map[string][]string {
	got := map[string][]string{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = append(got[g+"/"+res], r.Verbs...)
			}
		}
	}
	for _, v := range got {
		slices.Sort(v)
	}
	return got
}

func checkGrants(t *testing.T, what string, got, want map[string][]string) {
	t.Helper()
	for key, verbs := range got {
		w := slices.Clone(want[key])
		slices.Sort(w)
		if !slices.Equal(verbs, w) {
			t.Errorf("%s grants %v on %s, want %v", what, verbs, key, w)
		}
	}
	for key := range want {
		if _, ok := got[key]; !ok {
			t.Errorf("%s does not grant %s", what, key)
		}
	}
}

// TestControllerRBAC pins the controller's grants to exactly what
// docs/controller.md lists; the integration tests of kube/controller run
// the controller with them against a real API server.
func TestControllerRBAC(t *testing.T) {
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict(documents(t, "controller/role.yaml")[0], &role); err != nil {
		t.Fatal(err)
	}
	watch := []string{"list", "watch"}
	write := []string{"list", "watch", "create", "update", "delete"}
	checkGrants(t, "Role sllbrd-controller", grants(role.Rules), map[string][]string{
		"/pods": {"get", "list", "watch", "patch"}, "/services": watch, "/configmaps": watch,
		"discovery.k8s.io/endpointslices":                          write,
		"apps/deployments":                                         {"list", "watch", "create", "patch", "delete"},
		"apps/replicasets":                                         watch,
		"gateway.networking.k8s.io/gateways":                       watch,
		"gateway.networking.k8s.io/gateways/status":                {"update"},
		"meridio.experiment.gateway.api.poc/l34routes":             watch,
		"meridio.experiment.gateway.api.poc/gatewayrouters":        watch,
		"meridio.experiment.gateway.api.poc/l34routes/status":      {"update"},
		"meridio.experiment.gateway.api.poc/gatewayrouters/status": {"update"},
		"coordination.k8s.io/leases":                               {"get", "create", "update"},
		"events.k8s.io/events":                                     {"create", "patch"},
		"/events":                                                  {"create", "patch"},
	})
	var cluster rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(documents(t, "controller/cluster_role.yaml")[0], &cluster); err != nil {
		t.Fatal(err)
	}
	checkGrants(t, "ClusterRole sllbrd-controller-gatewayclasses", grants(cluster.Rules), map[string][]string{
		"gateway.networking.k8s.io/gatewayclasses":        watch,
		"gateway.networking.k8s.io/gatewayclasses/status": {"update"},
	})
	var binding rbacv1.ClusterRoleBinding
	if err := yaml.UnmarshalStrict(documents(t, "controller/cluster_role_binding.yaml")[0], &binding); err != nil {
		t.Fatal(err)
	}
	if binding.RoleRef.Name != cluster.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != "sllbrd-controller" {
		t.Errorf("ClusterRoleBinding %+v", binding)
	}
}

// TestControllerDeploymentContract checks the controller's Deployment: the
// controller subcommand, no capability, a non-root user, probes, and the
// ServiceAccount bound by the RBAC.
func TestControllerDeploymentContract(t *testing.T) {
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(documents(t, "controller/deployment.yaml")[0], &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 || pod.ServiceAccountName != "sllbrd-controller" {
		t.Fatalf("containers %d, service account %q", len(pod.Containers), pod.ServiceAccountName)
	}
	c := pod.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "controller" || !slices.Contains(c.Args, "--metrics-address=:9100") ||
		!slices.Contains(c.Args, "--template-configmap=sllbrd-templates") {
		t.Errorf("args %v", c.Args)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities: %+v", sc)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("the controller must run as non-root")
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes")
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("replicas %v: want a standby for the leader election", d.Spec.Replicas)
	}
	// The controller gives its own image to the SLLBR pods: it reads its
	// pod, named by the downward API, and its container named controller
	// (the default of --container).
	fields := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fields[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if fields["POD_NAME"] != "metadata.name" || fields["POD_NAMESPACE"] != "metadata.namespace" || c.Name != "controller" || c.Image == "" {
		t.Errorf("container %q image %q, downward API %v: want POD_NAME and POD_NAMESPACE, container controller, an image", c.Name, c.Image, fields)
	}
}

// TestTemplateIsEmbedded checks that the binary's default template is
// deploy/sllbrd/deployment.yaml.
func TestTemplateIsEmbedded(t *testing.T) {
	data, err := os.ReadFile("sllbrd/deployment.yaml")
	if err != nil || !bytes.Equal(data, SLLBRDeploymentTemplate) {
		t.Errorf("SLLBRDeploymentTemplate differs from sllbrd/deployment.yaml (%v)", err)
	}
}
