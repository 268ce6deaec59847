package status

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pod is an SLLBR pod created at t0 + age seconds.
func pod(name string, age int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second))},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
				{Name: "net.ipv4.ip_forward", Value: "1"}, {Name: "net.ipv4.ip_local_port_range", Value: "49152 65535"},
				{Name: "net.ipv4.conf.all.rp_filter", Value: "2"}}},
			Containers: []corev1.Container{{Name: "sllbrd", Image: "example.org/sllbrd:v1"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// rejected is a pod its kubelet refused, as the kubelet leaves it.
func rejected(name string, age int, reason, message string) *corev1.Pod {
	p := pod(name, age)
	p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: message}
	return p
}

func ready(name string, age int) *corev1.Pod {
	p := pod(name, age)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "sllbrd", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	return p
}

// waiting is a running pod whose container waits with reason.
func waiting(name string, age int, reason, message string) *corev1.Pod {
	p := pod(name, age)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sllbrd", Image: "example.org/sllbrd:v1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}
	return p
}

const forbidden = `Pod forbidden sysctl: "net.ipv4.ip_forward" not allowlisted`

func TestPodProblemsSysctlForbidden(t *testing.T) {
	// The ReplicaSet keeps replacing the rejected pods: one problem.
	pods := []*corev1.Pod{rejected("a", 1, "SysctlForbidden", forbidden), rejected("b", 2, "SysctlForbidden", forbidden), pod("c", 3)}
	got := PodProblems(pods, nil)
	if len(got) != 1 || got[0].Key != "pod: SysctlForbidden" || got[0].Kind != PodsFailed || got[0].Source != pods[1] {
		t.Fatalf("problems %+v, want one SysctlForbidden of kind PodsFailed from the newest pod, b", got)
	}
	msg := got[0].Message
	for _, part := range []string{"SysctlForbidden: " + forbidden, "--allowed-unsafe-sysctls=net.ipv4.ip_forward,net.ipv4.conf.all.rp_filter ", `docs/deploy.md, "Sysctls"`} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
	if strings.Contains(msg, "ip_local_port_range") {
		t.Errorf("message %q names a safe sysctl as unsafe", msg)
	}
	// Fixed: a newer pod is ready; the failed ones left behind say nothing.
	if got := PodProblems(append(pods, ready("d", 4)), nil); len(got) != 0 {
		t.Errorf("failed pods older than a ready one are reported: %+v", got)
	}
	// Only some nodes refuse: a pod refused after the ready one still counts.
	if got := PodProblems([]*corev1.Pod{ready("d", 4), rejected("e", 5, "SysctlForbidden", forbidden)}, nil); len(got) != 1 {
		t.Errorf("a pod refused after a ready one: %+v", got)
	}
}

func TestPodProblemsReasons(t *testing.T) {
	deleting := waiting("deleting", 1, "ErrImagePull", "x")
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	unschedulable := pod("unsched", 1)
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}
	restarted := pod("restarted", 1)
	restarted.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sllbrd", RestartCount: 3,
		State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "no such gateway"}}}}
	initPulling := pod("init", 1)
	initPulling.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "example.org/setup:1"}}
	initPulling.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "setup",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "example.org/setup:1"`}}}}
	crashWithLast := waiting("crash", 1, "CrashLoopBackOff", "back-off 40s restarting failed container=sllbrd pod=crash_ns(uid)")
	crashWithLast.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		rss     []*appsv1.ReplicaSet
		key     string // "" for no problem
		kind    PodProblemKind
		message string
	}{
		{"out of cpu", []*corev1.Pod{rejected("a", 1, "OutOfcpu", "Node didn't have enough resource: cpu")}, nil,
			"pod: OutOfcpu", PodsFailed, "pods failed on their node: OutOfcpu: Node didn't have enough resource: cpu"},
		{"node affinity", []*corev1.Pod{rejected("a", 1, "NodeAffinity", "Predicate NodeAffinity failed")}, nil, "pod: NodeAffinity", PodsFailed, "NodeAffinity: Predicate"},
		{"admission error", []*corev1.Pod{rejected("a", 1, "UnexpectedAdmissionError", "Allocate failed")}, nil, "pod: UnexpectedAdmissionError", PodsFailed, "Allocate failed"},
		{"failed without a reason", []*corev1.Pod{rejected("a", 1, "", "")}, nil, "", "", ""},
		{"unschedulable", []*corev1.Pod{unschedulable}, nil, "pod: Unschedulable", PodsUnschedulable, "pods cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."},
		{"image pull", []*corev1.Pod{waiting("a", 1, "ErrImagePull", `failed to pull "example.org/sllbrd:v1"`)}, nil,
			"container sllbrd: image example.org/sllbrd:v1", ImagePullFailing, "container sllbrd cannot pull its image: ErrImagePull: failed to pull"},
		{"pull back-off", []*corev1.Pod{waiting("a", 1, "ImagePullBackOff", "Back-off")}, nil, "container sllbrd: image example.org/sllbrd:v1", ImagePullFailing, "ImagePullBackOff"},
		{"invalid image name", []*corev1.Pod{waiting("a", 1, "InvalidImageName", "bad")}, nil, "container sllbrd: image example.org/sllbrd:v1", ImagePullFailing, "InvalidImageName: bad"},
		{"config error", []*corev1.Pod{waiting("a", 1, "CreateContainerConfigError", `secret "x" not found`)}, nil,
			"container sllbrd: create", ContainerNotCreated, `container sllbrd cannot be created: CreateContainerConfigError: secret "x" not found`},
		{"create error", []*corev1.Pod{waiting("a", 1, "CreateContainerError", "mount failed")}, nil, "container sllbrd: create", ContainerNotCreated, "CreateContainerError: mount failed"},
		{"run error, never started", []*corev1.Pod{waiting("a", 1, "RunContainerError", "exec format error")}, nil,
			"container sllbrd: crash", ContainerFailing, "container sllbrd keeps failing: RunContainerError: exec format error"},
		{"crash loop", []*corev1.Pod{crashWithLast}, nil, "container sllbrd: crash", ContainerFailing, "container sllbrd keeps failing: last exit code 2 (Error)"},
		{"running again between back-offs", []*corev1.Pod{restarted}, nil, "container sllbrd: crash", ContainerFailing, "last exit code 1 (Error): no such gateway"},
		{"init container", []*corev1.Pod{initPulling}, nil, "init container setup: image example.org/setup:1", ImagePullFailing, "init container setup cannot pull its image"},
		{"creating normally", []*corev1.Pod{waiting("a", 1, "ContainerCreating", "")}, nil, "", "", ""},
		{"being deleted", []*corev1.Pod{deleting}, nil, "", "", ""},
		{"ready", []*corev1.Pod{ready("a", 1)}, nil, "", "", ""},
		{"ReplicaSet cannot create pods", nil, []*appsv1.ReplicaSet{{Status: appsv1.ReplicaSetStatus{Conditions: []appsv1.ReplicaSetCondition{{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
			Message: `pods "sllbrd-sllb-a-1-" is forbidden: violates PodSecurity "baseline:latest": forbidden sysctls`}}}}},
			"ReplicaSet: FailedCreate", PodsNotCreated, `pods cannot be created: FailedCreate: pods "sllbrd-sllb-a-1-" is forbidden`},
	} {
		got := PodProblems(tc.pods, tc.rss)
		switch {
		case tc.key == "" && len(got) != 0:
			t.Errorf("%s: problems %+v, want none", tc.name, got)
		case tc.key != "" && (len(got) != 1 || got[0].Key != tc.key || got[0].Kind != tc.kind || !strings.Contains(got[0].Message, tc.message)):
			t.Errorf("%s: problems %+v, want key %q kind %s with a message containing %q", tc.name, got, tc.key, tc.kind, tc.message)
		case tc.key != "" && got[0].Source == nil:
			t.Errorf("%s: no source", tc.name)
		}
	}
	// A pull that alternates between ErrImagePull and ImagePullBackOff is
	// one problem; a pull of another image is another.
	other := waiting("b", 2, "ErrImagePull", "x")
	other.Spec.Containers[0].Image = "example.org/sllbrd:v2"
	got := PodProblems([]*corev1.Pod{waiting("a", 1, "ImagePullBackOff", "x"), waiting("c", 3, "ErrImagePull", "y"), other}, nil)
	if len(got) != 2 || got[0].Key != "container sllbrd: image example.org/sllbrd:v1" || got[1].Key != "container sllbrd: image example.org/sllbrd:v2" {
		t.Errorf("pull problems %+v", got)
	}
}

func TestPodProblemsAreBounded(t *testing.T) {
	hostile := rejected("a", 1, "Bad\nReason"+strings.Repeat("R", 200), "line one\nline two\r\t"+strings.Repeat("é", 400)+"\x00\xff")
	got := PodProblems([]*corev1.Pod{hostile}, nil)
	if len(got) != 1 {
		t.Fatalf("problems %+v", got)
	}
	m := got[0].Message
	if strings.ContainsAny(m, "\n\r\t\x00") || !strings.Contains(m, "line one line two") || len(m) > 450 || !strings.HasSuffix(m, " ...") {
		t.Errorf("message not one bounded line (%d bytes): %q", len(m), m)
	}
	if len(got[0].Key) > 80 || strings.Contains(got[0].Key, "\n") {
		t.Errorf("key %q", got[0].Key)
	}
	var many []*corev1.Pod
	for i := range 20 {
		many = append(many, rejected(string(rune('a'+i)), i, "Reason"+string(rune('A'+i)), "m"))
	}
	if got := PodProblems(many, nil); len(got) != MaxPodProblems {
		t.Errorf("%d problems, want at most %d", len(got), MaxPodProblems)
	}
}

func TestProgrammedSaysWhyNoReplicaIsReady(t *testing.T) {
	problems := PodProblems([]*corev1.Pod{rejected("a", 1, "SysctlForbidden", forbidden)}, nil)
	_, conds := GatewayStatus(Gateway{Generation: 2, Deployment: &Replicas{2, 0}, Pods: problems})
	p := find(conds, TypeProgrammed)
	if summary(p) != "Programmed=False/NoReadyReplicas@2" || !strings.HasPrefix(p.Message, "No SLLBR replica is ready (0 of 2); pods failed on their node: SysctlForbidden: ") ||
		!strings.Contains(p.Message, "--allowed-unsafe-sysctls=") {
		t.Errorf("%s %q", summary(p), p.Message)
	}
	_, conds = GatewayStatus(Gateway{Generation: 2, Deployment: &Replicas{2, 1}, Pods: problems})
	if p := find(conds, TypeProgrammed); summary(p) != "Programmed=True/Programmed@2" || !strings.Contains(p.Message, "1 of 2 SLLBR replicas ready; pods failed") {
		t.Errorf("one of two ready: %s %q", summary(p), p.Message)
	}
	var five []PodProblem
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		five = append(five, PodProblem{Key: k, Message: "problem " + k})
	}
	_, conds = GatewayStatus(Gateway{Deployment: &Replicas{1, 0}, Pods: five})
	if m := find(conds, TypeProgrammed).Message; !strings.HasSuffix(m, "problem a; problem b; problem c; and 2 more pod problems (Events on the Gateway)") {
		t.Errorf("five problems: %q", m)
	}
}
