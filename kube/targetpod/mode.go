package targetpod

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sllbrd/sllbrd/kube"
)

// The agents, as Status.Agent names them.
const (
	// SidecarAgent is `sllbrd target --pod`, a container of the pod.
	SidecarAgent = "sidecar"
	// nodeAgentPrefix starts NodeAgent's names.
	nodeAgentPrefix = "node/"
)

// NodeAgent is the name of the node daemon of node (`sllbrd target
// --node`): "node/<node>".
func NodeAgent(node string) string { return nodeAgentPrefix + node }

// IsNodeAgent reports whether agent (a Status.Agent) names a node daemon.
func IsNodeAgent(agent string) bool { return strings.HasPrefix(agent, nodeAgentPrefix) }

// AgentMode returns which agent pod asks to apply its network
// configuration: kube.TargetAgentSidecar, or kube.TargetAgentNode (also
// when kube.AnnotationTargetAgent is absent). Any other value is an error
// that says what to do; no agent applies anything then.
func AgentMode(pod *corev1.Pod) (string, error) {
	v, set := pod.Annotations[kube.AnnotationTargetAgent]
	switch {
	case !set || v == kube.TargetAgentNode:
		return kube.TargetAgentNode, nil
	case v == kube.TargetAgentSidecar:
		return kube.TargetAgentSidecar, nil
	}
	return "", fmt.Errorf("annotation %s is %q, neither %q nor %q (absent means %q): neither the sidecar nor the node daemon "+
		"applies this pod's network configuration; set it to %s or %s, or remove it",
		kube.AnnotationTargetAgent, v, kube.TargetAgentSidecar, kube.TargetAgentNode, kube.TargetAgentNode,
		kube.TargetAgentSidecar, kube.TargetAgentNode)
}

// refusal says why an agent of mode applies nothing in pod ("" when it
// applies), and whether to say so in the status annotation: an agent
// writes its refusal where no other agent has written (see mayWrite), except
// a node daemon in a pod marked for the sidecar, which stays out of it
// altogether (the sidecar writes that pod's status).
func refusal(mode string, pod *corev1.Pod) (why string, report bool) {
	want, err := AgentMode(pod)
	switch {
	case err != nil:
		return err.Error(), true
	case want == mode && mode == kube.TargetAgentNode && pod.Spec.HostNetwork:
		return "the pod uses the node's network namespace (hostNetwork: true): the node daemon never configures it, " +
			"as that would configure the node; run the application without hostNetwork", true
	case want == mode:
		return "", false
	case mode == kube.TargetAgentSidecar:
		how := "absent, which means " + kube.TargetAgentNode
		if _, set := pod.Annotations[kube.AnnotationTargetAgent]; set {
			how = fmt.Sprintf("%q", kube.TargetAgentNode)
		}
		return fmt.Sprintf("the node daemon, not this sidecar, applies this pod's network configuration (annotation %s is %s): "+
			"add %s: %s to the pod, or remove the sidecar and let the node daemon apply it",
			kube.AnnotationTargetAgent, how, kube.AnnotationTargetAgent, kube.TargetAgentSidecar), true
	}
	return fmt.Sprintf("the pod is marked for the sidecar (annotation %s is %q): the node daemon applies nothing in it",
		kube.AnnotationTargetAgent, kube.TargetAgentSidecar), false
}
