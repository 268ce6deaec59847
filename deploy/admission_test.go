package deploy

import (
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// targetParamsLabel selects the ConfigMaps that list the target
// ServiceAccounts (the policy's parameters).
const targetParamsLabel = "meridio-experiment/target-service-accounts"

// targetPolicy returns deploy/admission's policy and binding.
func targetPolicy(t *testing.T) (admissionv1.ValidatingAdmissionPolicy, admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	var policy admissionv1.ValidatingAdmissionPolicy
	var binding admissionv1.ValidatingAdmissionPolicyBinding
	if err := yaml.UnmarshalStrict(documents(t, "admission/target_policy.yaml")[0], &policy); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(documents(t, "admission/target_policy_binding.yaml")[0], &binding); err != nil {
		t.Fatal(err)
	}
	return policy, binding
}

// TestTargetPolicyContract pins the shape of the sidecar's policy that
// TestIntegrationTargetPolicy exercises (docs/target.md, "Trust model"):
// every operation on pods and their subresources, refused when it cannot be
// evaluated, matched only for the ServiceAccounts its ConfigMaps list, no
// effect where there is no such ConfigMap, Deny.
func TestTargetPolicyContract(t *testing.T) {
	policy, binding := targetPolicy(t)
	s := policy.Spec
	checkPodPolicy(t, policy)
	if s.ParamKind == nil || s.ParamKind.APIVersion != "v1" || s.ParamKind.Kind != "ConfigMap" {
		t.Errorf("paramKind %+v, want v1 ConfigMap", s.ParamKind)
	}
	if len(s.MatchConditions) != 1 || !strings.Contains(s.MatchConditions[0].Expression, "params.?data") {
		t.Errorf("matchConditions %+v, want one: the requesting ServiceAccount is a key of the parameters", s.MatchConditions)
	}
	b := binding.Spec
	if b.PolicyName != policy.Name || !slices.Equal(b.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) || b.MatchResources != nil {
		t.Errorf("binding %+v: want policy %s, Deny, everywhere", b, policy.Name)
	}
	if p := b.ParamRef; p == nil || p.Name != "" || p.Namespace != "" || p.Selector == nil ||
		len(p.Selector.MatchLabels) != 1 || p.Selector.MatchLabels[targetParamsLabel] != "true" ||
		p.ParameterNotFoundAction == nil || *p.ParameterNotFoundAction != admissionv1.AllowAction {
		t.Errorf("paramRef %+v: want the ConfigMaps of the request's namespace labelled %s=true, none meaning no effect", p, targetParamsLabel)
	}
}

// checkPodPolicy checks what the policies of deploy/ share: every
// operation on pods and their subresources in every namespace, refused when
// it cannot be evaluated, each validation Forbidden with a message saying
// why.
func checkPodPolicy(t *testing.T, policy admissionv1.ValidatingAdmissionPolicy) {
	t.Helper()
	s := policy.Spec
	if s.FailurePolicy == nil || *s.FailurePolicy != admissionv1.Fail {
		t.Errorf("%s: failurePolicy %v, want Fail", policy.Name, s.FailurePolicy)
	}
	if s.MatchConstraints == nil || len(s.MatchConstraints.ResourceRules) != 1 {
		t.Fatalf("%s: matchConstraints %+v, want one rule", policy.Name, s.MatchConstraints)
	}
	r := s.MatchConstraints.ResourceRules[0]
	if !slices.Equal(r.APIGroups, []string{""}) || !slices.Equal(r.Resources, []string{"pods", "pods/*"}) ||
		!slices.Equal(r.Operations, []admissionv1.OperationType{admissionv1.OperationAll}) ||
		s.MatchConstraints.NamespaceSelector != nil || s.MatchConstraints.ObjectSelector != nil {
		t.Errorf("%s: rule %+v: want every operation on pods and their subresources, in every namespace", policy.Name, r)
	}
	if len(s.Validations) == 0 {
		t.Errorf("%s: no validations", policy.Name)
	}
	for _, v := range s.Validations {
		if v.Reason == nil || *v.Reason != "Forbidden" || v.MessageExpression == "" {
			t.Errorf("%s: validation %q: reason %v, messageExpression %q: want Forbidden and a message saying why", policy.Name, v.Expression, v.Reason, v.MessageExpression)
		}
	}
}
