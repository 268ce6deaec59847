package deploy

import (
	"path"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// nodeExtra is the user extra key in which kube-apiserver names the node
// of a token bound to a pod (or to a node).
const nodeExtra = "authentication.kubernetes.io/node-name"

// nodeMatch is the ServiceAccount part of the node policy's match
// condition: the name contains targetNodeName.
const nodeMatch = "request.userInfo.username.split(':')[3].contains('" + targetNodeName + "')"

// targetNodePolicy returns deploy/target-node's policy and binding.
func targetNodePolicy(t *testing.T) (admissionv1.ValidatingAdmissionPolicy, admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	var policy admissionv1.ValidatingAdmissionPolicy
	var binding admissionv1.ValidatingAdmissionPolicyBinding
	if err := yaml.UnmarshalStrict(documents(t, path.Join(targetNodeDir, "policy.yaml"))[0], &policy); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(documents(t, path.Join(targetNodeDir, "policy_binding.yaml"))[0], &binding); err != nil {
		t.Fatal(err)
	}
	return policy, binding
}

// nodePolicyMatches reports whether deploy/target-node's policy restricts
// the ServiceAccount sa (of any namespace): its match condition selects the
// ServiceAccounts whose name contains targetNodeName
// (TestTargetNodePolicyContract pins the condition,
// TestIntegrationTargetNodePolicy runs it).
func nodePolicyMatches(t *testing.T, sa string) bool {
	t.Helper()
	policy, _ := targetNodePolicy(t)
	return strings.Contains(sa, targetNodeName) &&
		slices.ContainsFunc(policy.Spec.MatchConditions, func(c admissionv1.MatchCondition) bool { return strings.Contains(c.Expression, nodeMatch) })
}

// TestTargetNodePolicyContract pins the shape of the node daemon's policy
// that TestIntegrationTargetNodePolicy exercises (docs/deploy.md, "The node
// daemon"): every operation on pods and their subresources, refused when it
// cannot be evaluated, matched for the daemon's ServiceAccount by name in
// any namespace, without parameters, the node taken from the token's user
// extra, Deny everywhere, each refusal saying why.
func TestTargetNodePolicyContract(t *testing.T) {
	policy, binding := targetNodePolicy(t)
	s := policy.Spec
	checkPodPolicy(t, policy)
	if s.ParamKind != nil {
		t.Errorf("paramKind %v: want no parameters", s.ParamKind)
	}
	if len(s.MatchConditions) != 1 || !strings.Contains(s.MatchConditions[0].Expression, "startsWith('system:serviceaccount:')") ||
		!strings.Contains(s.MatchConditions[0].Expression, nodeMatch) {
		t.Errorf("matchConditions %+v, want one: a ServiceAccount whose name contains %s", s.MatchConditions, targetNodeName)
	}
	if !slices.ContainsFunc(s.Variables, func(v admissionv1.Variable) bool { return strings.Contains(v.Expression, "'"+nodeExtra+"'") }) {
		t.Errorf("no variable reads the token's node (%s)", nodeExtra)
	}
	b := binding.Spec
	if b.PolicyName != policy.Name || !slices.Equal(b.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) ||
		b.MatchResources != nil || b.ParamRef != nil {
		t.Errorf("binding %+v: want policy %s, Deny, everywhere, no parameters", b, policy.Name)
	}
}
