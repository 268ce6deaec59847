package endpoints

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// The faults of a pod that is listed, but not ready until someone fixes
// its annotations (Candidate.Fault).
const (
	// FaultInvalidTargetAgent: the pod's kube.AnnotationTargetAgent is
	// neither kube.TargetAgentSidecar nor kube.TargetAgentNode, so no agent
	// applies its network configuration (both refuse).
	FaultInvalidTargetAgent Fault = "InvalidTargetAgent"
	// FaultInvalidTargetNetworkStatus: the status annotation of a pod of
	// the node daemon is not a target network status.
	FaultInvalidTargetNetworkStatus Fault = "InvalidTargetNetworkStatus"
)

// ListedFaults are the faults of Candidate.Fault, in a fixed order.
var ListedFaults = []Fault{FaultInvalidTargetAgent, FaultInvalidTargetNetworkStatus}

// Unapplied says why a pod's network configuration (VIPs and routes) is
// not known to be applied, "" when it is or when the pod's Ready condition
// says so. The pod's kube.AnnotationTargetAgent decides:
//   - kube.TargetAgentSidecar: "" (the sidecar's readiness probe holds the
//     pod NotReady until its configuration is applied);
//   - absent or kube.TargetAgentNode: the node daemon applies it, and no
//     probe waits for it: "" only when the pod's
//     kube.AnnotationTargetNetworkStatus says ready;
//   - any other value: never "" (no agent applies anything), with
//     FaultInvalidTargetAgent.
//
// fault is set when the reason needs someone to act, not to wait. Only the
// status's ready bit counts: its other fields, and fields this sllbrd does
// not know, change nothing.
func Unapplied(p *corev1.Pod) (why string, fault Fault) {
	agent, marked := p.Annotations[kube.AnnotationTargetAgent]
	switch {
	case marked && agent == kube.TargetAgentSidecar:
		return "", ""
	case marked && agent != kube.TargetAgentNode:
		return fmt.Sprintf("annotation %s is %q, neither %q nor %q (absent means %q): no agent applies its network configuration",
			kube.AnnotationTargetAgent, agent, kube.TargetAgentSidecar, kube.TargetAgentNode, kube.TargetAgentNode), FaultInvalidTargetAgent
	}
	raw, ok := p.Annotations[kube.AnnotationTargetNetworkStatus]
	if !ok {
		return "the node daemon has not applied its network configuration yet (no annotation " +
			kube.AnnotationTargetNetworkStatus + ")", ""
	}
	s, err := targetpod.ParseStatus(raw)
	if err != nil {
		return fmt.Sprintf("annotation %s: %v", kube.AnnotationTargetNetworkStatus, err), FaultInvalidTargetNetworkStatus
	}
	if !s.Ready {
		return "its network configuration is not applied: annotation " + kube.AnnotationTargetNetworkStatus + " says ready: false", ""
	}
	return "", ""
}
