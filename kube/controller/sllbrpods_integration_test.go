package controller_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const forbiddenSysctl = `Pod forbidden sysctl: "net.ipv4.ip_forward" not allowlisted`

// createReplicaSet creates a ReplicaSet of the Deployment's template as
// the Deployment controller would, controlled by owner (nil for none).
func (e *env) createReplicaSet(name string, d *appsv1.Deployment, owner *metav1.OwnerReference) *appsv1.ReplicaSet {
	e.t.Helper()
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: d.Spec.Template.Labels},
		Spec:       appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template},
	}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	got, err := e.kube.AppsV1().ReplicaSets(e.ns).Create(e.ctx, rs, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create ReplicaSet %s: %v", name, err)
	}
	return got
}

func controlledBy(kind, name string, uid types.UID) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// createReplicaSetPod creates a pod of rs's template on node-1 (as the
// ReplicaSet controller and the scheduler would), then writes status as
// its kubelet would.
func (e *env) createReplicaSetPod(name string, rs *appsv1.ReplicaSet, status corev1.PodStatus) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*controlledBy("ReplicaSet", rs.Name, rs.UID)}},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = "node-1"
	got, err := e.kube.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Pod %s: %v", name, err)
	}
	got.Status = status
	if got, err = e.kube.CoreV1().Pods(e.ns).UpdateStatus(e.ctx, got, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("update status of Pod %s: %v", name, err)
	}
	return got
}

// sysctlForbidden is the status the kubelet gives a pod it refuses.
func sysctlForbidden() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodFailed, Reason: "SysctlForbidden", Message: forbiddenSysctl}
}

// waitingContainer is the status of a pod whose container sllbrd waits.
func waitingContainer(reason, message string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "sllbrd", Image: controllerImage,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}}
}

// gatewayEvents returns the Warning Events on a Gateway with reason.
func (e *env) gatewayEvents(gateway, reason string) []eventsv1.Event {
	e.t.Helper()
	list, err := e.kube.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("list Events: %v", err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "Gateway" && ev.Regarding.Name == gateway && ev.Reason == reason && ev.Type == corev1.EventTypeWarning {
			out = append(out, ev)
		}
	}
	return out
}

// waitProgrammed waits until the Gateway's Programmed condition is want
// and its message contains every part and none of the absent.
func (e *env) waitProgrammed(gateway, want string, parts, absent []string) string {
	e.t.Helper()
	var msg string
	e.waitFor(fmt.Sprintf("Gateway %s Programmed %s saying %q", gateway, want, parts), func() (bool, string) {
		gw := e.gateway(gateway)
		got := conditionOf(gw.Status.Conditions, "Programmed")
		msg = messageOf(gw.Status.Conditions, "Programmed")
		if got != want {
			return false, got + ": " + msg
		}
		for _, p := range parts {
			if !strings.Contains(msg, p) {
				return false, msg
			}
		}
		for _, a := range absent {
			if strings.Contains(msg, a) {
				return false, msg
			}
		}
		return true, ""
	})
	return msg
}

// TestIntegrationSLLBRPodProblems writes the SLLBR pods of a Gateway's
// Deployment as the ReplicaSet controller and a kubelet that does not allow
// the unsafe sysctls would (the ReplicaSet replacing each rejected pod),
// beside a look-alike pod with the same labels and another owner, and
// checks the Gateway's Programmed condition and its Events: one per
// distinct problem, not repeated while it lasts, none about the look-alike.
func TestIntegrationSLLBRPodProblems(t *testing.T) {
	e := newEnv(t, "sllbrd-ctl-pods")
	e.createFiles(filepath.Join(deployDir, "rbac", "service_account.yaml")) // the SLLBR pods' ServiceAccount
	e.createClass()
	e.createGateway(gatewayObject("sllb-a"))
	r := e.startController("only")
	e.waitLeading(r)
	d := e.waitDeployment("created", func(*appsv1.Deployment) bool { return true })
	rs := e.createReplicaSet(deploymentName+"-5d8f7", d, controlledBy("Deployment", d.Name, d.UID))
	impostor := e.createReplicaSet("impostor-7c9f", d, nil) // the same labels, no owner
	e.createReplicaSetPod("impostor-7c9f-aaaaa", impostor, waitingContainer("ImagePullBackOff", `Back-off pulling image "evil"`))
	e.createReplicaSetPod(deploymentName+"-5d8f7-aaaaa", rs, sysctlForbidden())

	const sysctlReason, configReason = "SLLBRPodsFailed", "SLLBRContainerNotCreated"
	t.Run("a pod the kubelet refuses", func(t *testing.T) {
		e.waitProgrammed("sllb-a", "False/NoReadyReplicas@1", []string{
			"No SLLBR replica is ready (0 of 2); pods failed on their node: SysctlForbidden: " + forbiddenSysctl,
			"--allowed-unsafe-sysctls=net.ipv4.ip_forward,net.ipv6.conf.all.forwarding,", "fwmark_reflect ", `docs/deploy.md, "Sysctls"`,
		}, []string{"ImagePullBackOff", "evil", "ip_local_port_range"})
		note := e.waitEvent("Gateway", "sllb-a", sysctlReason, "SysctlForbidden")
		if !strings.HasPrefix(note, "SLLBR pods failed on their node: SysctlForbidden") {
			t.Errorf("Event note %q", note)
		}
	})

	t.Run("the ReplicaSet replaces it, and another problem comes", func(t *testing.T) {
		e.createReplicaSetPod(deploymentName+"-5d8f7-bbbbb", rs, sysctlForbidden())
		e.createReplicaSetPod(deploymentName+"-5d8f7-ccccc", rs, sysctlForbidden())
		e.createReplicaSetPod(deploymentName+"-5d8f7-ddddd", rs, waitingContainer("CreateContainerConfigError", "secret \"bgp-auth\" not found\nretrying"))
		e.waitProgrammed("sllb-a", "False/NoReadyReplicas@1", []string{"SysctlForbidden",
			`container sllbrd cannot be created: CreateContainerConfigError: secret "bgp-auth" not found retrying`}, []string{"\n", "evil"})
		e.waitEvent("Gateway", "sllb-a", configReason, "CreateContainerConfigError")
		time.Sleep(time.Second) // give a repeated Event the time to be written
		for _, reason := range []string{sysctlReason, configReason} {
			evs := e.gatewayEvents("sllb-a", reason)
			if len(evs) != 1 || evs[0].Series != nil || evs[0].DeprecatedCount > 1 {
				t.Errorf("%s: %d Events (first %+v), want one, not repeated", reason, len(evs), evs)
				continue
			}
			if rel := evs[0].Related; rel == nil || rel.Kind != "Pod" || !strings.HasPrefix(rel.Name, deploymentName+"-5d8f7-") {
				t.Errorf("%s: related %+v, want the SLLBR pod", reason, rel)
			}
		}
		if evs := e.gatewayEvents("sllb-a", "SLLBRImagePullFailing"); len(evs) != 0 {
			t.Errorf("an Event about the look-alike pod: %+v", evs)
		}
	})

	t.Run("a ReplicaSet that cannot create pods", func(t *testing.T) {
		failing := rs.DeepCopy()
		failing.Status = appsv1.ReplicaSetStatus{ObservedGeneration: rs.Generation, Conditions: []appsv1.ReplicaSetCondition{{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", LastTransitionTime: metav1.Now(),
			Message: `pods "sllbrd-sllb-a-5d8f7-" is forbidden: exceeded quota: pods`}}}
		if _, err := e.kube.AppsV1().ReplicaSets(e.ns).UpdateStatus(e.ctx, failing, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitProgrammed("sllb-a", "False/NoReadyReplicas@1", []string{"pods cannot be created: FailedCreate: " + `pods "sllbrd-sllb-a-5d8f7-" is forbidden`}, nil)
		e.waitEvent("Gateway", "sllb-a", "SLLBRPodsNotCreated", "exceeded quota")
	})

	t.Run("fixed: a newer pod is ready", func(t *testing.T) {
		time.Sleep(1100 * time.Millisecond) // creation times have seconds: the ready pod is newer than the refused ones
		e.deletePod(deploymentName+"-5d8f7-ddddd", 0)
		cur, err := e.kube.AppsV1().ReplicaSets(e.ns).Get(e.ctx, rs.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Status = appsv1.ReplicaSetStatus{ObservedGeneration: cur.Generation, Replicas: 1, ReadyReplicas: 1} // pods are created again
		if _, err := e.kube.AppsV1().ReplicaSets(e.ns).UpdateStatus(e.ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.createReplicaSetPod(deploymentName+"-5d8f7-eeeee", rs, corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}})
		e.setReadyReplicas("sllb-a", 1)
		if msg := e.waitProgrammed("sllb-a", "True/Programmed@1", nil, []string{"SysctlForbidden", "FailedCreate", "CreateContainerConfigError"}); msg != "1 of 2 SLLBR replicas ready" {
			t.Errorf("Programmed message %q", msg)
		}
		// The kubelet of another node refuses the next pod: the problem is
		// back, and reported again.
		e.createReplicaSetPod(deploymentName+"-5d8f7-fffff", rs, sysctlForbidden())
		e.waitProgrammed("sllb-a", "True/Programmed@1", []string{"1 of 2 SLLBR replicas ready; pods failed on their node: SysctlForbidden"}, nil)
		e.waitFor("the SysctlForbidden Event again", func() (bool, string) {
			evs := e.gatewayEvents("sllb-a", sysctlReason)
			n := len(evs)
			if n == 1 && evs[0].Series != nil {
				n = int(evs[0].Series.Count)
			}
			return n == 2, fmt.Sprint(n)
		})
	})
}
