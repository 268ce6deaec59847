package onnode

import (
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// phaseSysctlsRefused: the kubelet restarts without allowing sllbrd's unsafe
// sysctls, as on a node whose administrator did not allow them, and the
// SLLBR Deployment is rolled. The kubelet rejects the new pods
// (SysctlForbidden); the user learns why from the Gateway's Programmed
// condition and a Warning Event on the Gateway, which name the kubelet
// flag. Allowing the sysctls again completes the rollout.
func (e *env) phaseSysctlsRefused() {
	start := time.Now()
	if err := e.node.SetUnsafeSysctls(e.ctx, false); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { e.deleteFailedPods() })
	e.k("rollout", "restart", "deployment/"+sllbrName)
	var why string
	e.waitFor(2*time.Minute, "a rejected SLLBR pod", func() (bool, string) {
		for _, p := range e.pods(sllbrSelector) {
			if p.Status.Phase == corev1.PodFailed && p.Status.Reason == "SysctlForbidden" {
				why = p.Status.Message
				return true, ""
			}
		}
		return false, e.podProblems(e.deployment(sllbrName))
	})
	e.t.Logf("the kubelet rejects the SLLBR pod: SysctlForbidden: %s", why)
	var cond metav1.Condition
	e.waitFor(time.Minute, "the Gateway says why", func() (bool, string) {
		cond = e.gatewayCondition("Programmed")
		return strings.Contains(cond.Message, "SysctlForbidden") && strings.Contains(cond.Message, "--allowed-unsafe-sysctls="), cond.Message
	})
	e.t.Logf("Gateway %s: Programmed=%s reason %s: %s", gatewayName, cond.Status, cond.Reason, cond.Message)
	var event string
	e.waitFor(time.Minute, "a Warning Event on the Gateway", func() (bool, string) {
		event = e.gatewayEvent("SysctlForbidden")
		return event != "", "none yet"
	})
	e.t.Logf("kubectl events --for gateway/%s: %s", gatewayName, event)
	e.record("kubelet refusing the sysctls: the Gateway and an Event say why", time.Since(start))

	start = time.Now()
	if err := e.node.SetUnsafeSysctls(e.ctx, true); err != nil {
		e.t.Fatal(err)
	}
	e.k("rollout", "status", "deployment/"+sllbrName, "--timeout=5m")
	e.deleteFailedPods()
	e.waitSLLBRs(2, "the sysctls allowed again")
	e.waitFor(time.Minute, "the Gateway Programmed again", func() (bool, string) {
		c := e.gatewayCondition("Programmed")
		return c.Status == metav1.ConditionTrue, c.Message
	})
	for _, vip := range vips {
		e.runFlows(vip, flowSets[0], flowsPerSet)
	}
	e.record("the sysctls allowed again: the rollout completes, flows answered", time.Since(start))
}

// gatewayCondition returns a condition of the Gateway's status.
func (e *env) gatewayCondition(typ string) metav1.Condition {
	e.t.Helper()
	obj, err := e.dyn.Dynamic.Resource(gatewayv1.SchemeGroupVersion.WithResource("gateways")).Namespace(ns).Get(e.ctx, gatewayName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var gw gatewayv1.Gateway
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &gw); err != nil {
		e.t.Fatal(err)
	}
	for _, c := range gw.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// gatewayEvent returns the first Warning Event on the Gateway whose note
// contains text ("" if none), as `kubectl events --for` shows them.
func (e *env) gatewayEvent(text string) string {
	out := e.k("events", "--for", "gateway/"+gatewayName, "--types=Warning", "-o", "jsonpath={range .items[*]}{.reason}{\": \"}{.note}{.message}{\"\\n\"}{end}")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, text) {
			return line
		}
	}
	return ""
}

// deleteFailedPods removes the pods the kubelet rejected (a ReplicaSet
// leaves them behind).
func (e *env) deleteFailedPods() {
	if _, err := e.tryRun(e.kubectl, "delete", "pods", "--field-selector=status.phase==Failed", "--wait=false"); err != nil {
		e.t.Logf("delete the failed pods: %v", err)
	}
}

// deployment gets a Deployment, failing the test if it cannot.
func (e *env) deployment(name string) *appsv1.Deployment {
	e.t.Helper()
	d, err := e.kube.AppsV1().Deployments(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}
