package endpoints

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/kube"
)

// Status annotations as the agents write them (one with a field this
// sllbrd does not know).
const (
	statusReady    = `{"version":1,"observedGeneration":3,"ready":true,"gateways":[{"name":"sllb-a","table":4096,"vips":["20.0.0.1/32"],"nextHops":{"ipv4":["169.111.100.2"]}}]}`
	statusNotReady = `{"version":1,"observedGeneration":3,"ready":false,"errors":["add route: file exists"]}`
	statusAgent    = `{"version":1,"observedGeneration":3,"ready":true,"agent":"node/node-1","future":{"x":1}}`
)

// agentPod is newPod with the target-agent annotation agent (none when
// agent is absent) and the status annotation status (none when "").
func agentPod(name, agent, status string) *corev1.Pod {
	p := newPod(name, statusOK)
	delete(p.Annotations, kube.AnnotationTargetAgent)
	if agent != absent {
		p.Annotations[kube.AnnotationTargetAgent] = agent
	}
	if status != "" {
		p.Annotations[kube.AnnotationTargetNetworkStatus] = status
	}
	return p
}

// absent stands for no target-agent annotation in agentPod.
const absent = "\x00absent"

var statusOK = status(ns+"/macvlan-nad-1", "169.111.100.11", "fd00:111::11")

func TestUnapplied(t *testing.T) {
	for _, tc := range []struct {
		name, agent, status string
		why                 string // part of the reason; "" for applied
		fault               Fault
	}{
		{"sidecar: its Ready condition decides, with no status", kube.TargetAgentSidecar, "", "", ""},
		{"sidecar: its Ready condition decides, whatever the status", kube.TargetAgentSidecar, statusNotReady, "", ""},
		{"node (absent): no status yet", absent, "", "has not applied its network configuration yet", ""},
		{"node (absent): ready false", absent, statusNotReady, "says ready: false", ""},
		{"node (absent): ready true", absent, statusReady, "", ""},
		{"node (absent): ready true, fields this sllbrd does not know", absent, statusAgent, "", ""},
		{"node: ready true", kube.TargetAgentNode, statusReady, "", ""},
		{"node: ready false", kube.TargetAgentNode, statusNotReady, "says ready: false", ""},
		{"node: the status is not JSON", kube.TargetAgentNode, `{"ready":`, "annotation " + kube.AnnotationTargetNetworkStatus, FaultInvalidTargetNetworkStatus},
		{"node: ready is not a boolean", absent, `{"ready":"yes"}`, "not a target network status", FaultInvalidTargetNetworkStatus},
		{"unknown agent, however ready the status", "Sidecar", statusReady, `is "Sidecar", neither "sidecar" nor "node"`, FaultInvalidTargetAgent},
		{"an empty agent is not absent", "", statusReady, `is "", neither`, FaultInvalidTargetAgent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, fault := Unapplied(agentPod("p", tc.agent, tc.status))
			if fault != tc.fault || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("Unapplied = %q, %q; want %q containing %q", why, fault, tc.fault, tc.why)
			}
		})
	}
}

// TestCandidatesAgents: a pod of the node daemon is ready and serving only
// once its status says ready; a sidecar's pod by its Ready condition; a
// pod of an unknown agent is listed, never ready, with its fault. The SLLBR
// pods (NextHops) are ready by their Ready condition whatever they carry.
func TestCandidatesAgents(t *testing.T) {
	notReady := func(p *corev1.Pod) *corev1.Pod {
		p.Status.Conditions[0].Status = corev1.ConditionFalse
		return p
	}
	deleting := func(p *corev1.Pod) *corev1.Pod {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		return p
	}
	type conds struct {
		ready, serving, terminating bool
		fault                       Fault
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want conds
	}{
		{"node, no status: not ready, not serving", agentPod("p", absent, ""), conds{}},
		{"node, ready false", agentPod("p", absent, statusNotReady), conds{}},
		{"node, ready true", agentPod("p", absent, statusReady), conds{ready: true, serving: true}},
		{"node, ready true, the pod not Ready", notReady(agentPod("p", absent, statusReady)), conds{}},
		{"node, ready true, being deleted: serving", deleting(agentPod("p", kube.TargetAgentNode, statusReady)),
			conds{serving: true, terminating: true}},
		{"node, never applied, being deleted: not serving", deleting(agentPod("p", absent, "")), conds{terminating: true}},
		{"sidecar, no status: its Ready condition", agentPod("p", kube.TargetAgentSidecar, ""), conds{ready: true, serving: true}},
		{"sidecar, not Ready", notReady(agentPod("p", kube.TargetAgentSidecar, statusReady)), conds{}},
		{"unknown agent: listed, not ready, with its fault", agentPod("p", "daemon", statusReady),
			conds{fault: FaultInvalidTargetAgent}},
		{"node, invalid status: listed, not ready, with its fault", agentPod("p", absent, "[]"),
			conds{fault: FaultInvalidTargetNetworkStatus}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cands, skipped := Candidates([]*corev1.Pod{tc.pod}, gw)
			if len(cands) != 1 || len(skipped) != 0 {
				t.Fatalf("%d candidates, skipped %v; want the pod listed", len(cands), skipped)
			}
			c := cands[0]
			if got := (conds{c.Ready, c.Serving, c.Terminating, c.Fault}); got != tc.want {
				t.Errorf("candidate %+v, want %+v (unapplied: %q)", got, tc.want, c.Unapplied)
			}
			hops := NextHops([]*corev1.Pod{tc.pod}, gw)
			if want := podReady(tc.pod) && tc.pod.DeletionTimestamp == nil; len(hops) != 1 || hops[0].Ready != want || hops[0].Unapplied != "" {
				t.Errorf("as a next hop: %+v, want ready %v by the Ready condition alone", hops, want)
			}
		})
	}
}
