package deploy

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// rbacFiles hold every RBAC object of deploy/ (docs/deploy.md,
// "ServiceAccounts").
var rbacFiles = []string{
	"rbac/role.yaml", "rbac/role_binding.yaml", "rbac/service_account.yaml",
	"controller/role.yaml", "controller/role_binding.yaml", "controller/cluster_role.yaml",
	"controller/cluster_role_binding.yaml", "controller/service_account.yaml",
	"examples/target-application.yaml",
	"target-node/service_account.yaml", "target-node/cluster_role.yaml", "target-node/cluster_role_binding.yaml",
}

// rbacObjects are the roles, bindings and policy parameters of rbacFiles.
type rbacObjects struct {
	rules     map[string][]rbacv1.PolicyRule // "Role/name" or "ClusterRole/name"
	bindings  map[string][]string            // ServiceAccount -> sorted roles ("Role/name")
	accounts  []string                       // the ServiceAccounts defined
	policyFor map[string]bool                // the ServiceAccounts the target policy's ConfigMaps list
}

func readRBAC(t *testing.T) rbacObjects {
	t.Helper()
	o := rbacObjects{rules: map[string][]rbacv1.PolicyRule{}, bindings: map[string][]string{}, policyFor: map[string]bool{}}
	for _, f := range rbacFiles {
		for _, doc := range documents(t, f) {
			var head struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			o.add(t, f, head.Kind, doc)
		}
	}
	for sa := range o.bindings {
		slices.Sort(o.bindings[sa])
	}
	return o
}

func (o *rbacObjects) add(t *testing.T, file, kind string, doc []byte) {
	t.Helper()
	strict := func(out any) {
		if err := yaml.UnmarshalStrict(doc, out); err != nil {
			t.Fatalf("%s: %s: %v", file, kind, err)
		}
	}
	switch kind {
	case "Role", "ClusterRole":
		var r rbacv1.ClusterRole // a Role's fields are a subset
		strict(&r)
		o.rules[kind+"/"+r.Name] = r.Rules
	case "RoleBinding", "ClusterRoleBinding":
		var b rbacv1.ClusterRoleBinding
		strict(&b)
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				t.Errorf("%s: %s %s binds %s %s: only ServiceAccounts are bound", file, kind, b.Name, s.Kind, s.Name)
			}
			o.bindings[s.Name] = append(o.bindings[s.Name], b.RoleRef.Kind+"/"+b.RoleRef.Name)
		}
	case "ServiceAccount":
		var sa corev1.ServiceAccount
		strict(&sa)
		o.accounts = append(o.accounts, sa.Name)
	case "ConfigMap":
		var cm corev1.ConfigMap
		strict(&cm)
		if cm.Labels[targetParamsLabel] == "true" {
			for sa := range cm.Data {
				o.policyFor[sa] = true
			}
		}
	}
}

// TestServiceAccountGrants pins who may do what: each ServiceAccount of
// deploy/ is bound to exactly the roles docs/deploy.md reviews (their
// verbs are pinned by TestRoleGrantsOnlyReads, TestControllerRBAC and
// TestTargetApplicationExample); no role grants a wildcard, a way to gain
// rights (escalate, bind, impersonate, tokens, exec into pods), or a
// Secret it does not name; and every ServiceAccount that may write pods,
// except the controller's, is restricted by deploy/admission's policy or,
// the node daemon's, by deploy/target-node's.
func TestServiceAccountGrants(t *testing.T) {
	o := readRBAC(t)
	want := map[string][]string{
		"sllbrd":             {"Role/sllbrd"},
		"sllbrd-controller":  {"ClusterRole/sllbrd-controller-gatewayclasses", "Role/sllbrd-controller"},
		"target-application": {"Role/sllbrd-target"},
		targetNodeName:       {"ClusterRole/" + targetNodeName},
	}
	for sa, roles := range want {
		if !slices.Equal(o.bindings[sa], roles) {
			t.Errorf("ServiceAccount %s is bound to %v, want %v", sa, o.bindings[sa], roles)
		}
		if !slices.Contains(o.accounts, sa) {
			t.Errorf("ServiceAccount %s is bound but not defined", sa)
		}
	}
	for sa, roles := range o.bindings {
		if _, ok := want[sa]; !ok {
			t.Errorf("ServiceAccount %s is bound to %v and not reviewed", sa, roles)
		}
		for _, role := range roles {
			if _, ok := o.rules[role]; !ok {
				t.Errorf("ServiceAccount %s: %s is not defined in deploy/", sa, role)
			}
		}
	}
	forbiddenVerbs := []string{"*", "escalate", "bind", "impersonate", "deletecollection"}
	forbiddenResources := []string{"*", "serviceaccounts/token", "pods/exec", "pods/attach", "pods/portforward",
		"pods/ephemeralcontainers", "nodes/proxy", "roles", "rolebindings", "clusterroles", "clusterrolebindings"}
	for role, rules := range o.rules {
		for _, r := range rules {
			for _, v := range r.Verbs {
				if slices.Contains(forbiddenVerbs, v) {
					t.Errorf("%s grants %q on %v", role, v, r.Resources)
				}
			}
			for _, res := range r.Resources {
				if slices.Contains(forbiddenResources, res) {
					t.Errorf("%s grants %v on %s", role, r.Verbs, res)
				}
				if res == "secrets" && len(r.ResourceNames) == 0 {
					t.Errorf("%s grants every Secret (%v)", role, r.Verbs)
				}
			}
			if slices.Contains(r.APIGroups, "*") || len(r.NonResourceURLs) > 0 {
				t.Errorf("%s: rule %+v", role, r)
			}
		}
	}
	for sa, roles := range o.bindings {
		writesPods := false
		for _, role := range roles {
			g := grants(o.rules[role])
			writesPods = writesPods || slices.ContainsFunc(g["/pods"], func(v string) bool { return v == "patch" || v == "update" })
		}
		if restricted := o.policyFor[sa] || nodePolicyMatches(t, sa); writesPods && sa != "sllbrd-controller" && !restricted {
			t.Errorf("ServiceAccount %s may write pods and neither a ConfigMap labelled %s=true lists it nor %s's policy matches it",
				sa, targetParamsLabel, targetNodeDir)
		}
	}
}
