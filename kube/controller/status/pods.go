package status

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PodProblem is why SLLBR pods do not start or do not become ready.
type PodProblem struct {
	// Key identifies the problem while it lasts, whichever pods have it (a
	// ReplicaSet replaces a rejected pod by a new one with the same
	// problem): the pod-level reason, or a container and the kind of its
	// trouble (with the image for a pull).
	Key string
	// Kind sorts the problem.
	Kind PodProblemKind
	// Message says what happened and, where known, what to change: one
	// line, bounded.
	Message string
	// Source is the newest pod (or the ReplicaSet) with the problem.
	Source runtime.Object
}

// PodProblemKind sorts pod problems.
type PodProblemKind string

// The kinds of pod problems.
const (
	PodsNotCreated      PodProblemKind = "PodsNotCreated"      // a ReplicaSet cannot create them
	PodsFailed          PodProblemKind = "PodsFailed"          // their node refused or stopped them
	PodsUnschedulable   PodProblemKind = "PodsUnschedulable"   // no node can take them
	ImagePullFailing    PodProblemKind = "ImagePullFailing"    // a container's image cannot be pulled
	ContainerNotCreated PodProblemKind = "ContainerNotCreated" // a container cannot be created
	ContainerFailing    PodProblemKind = "ContainerFailing"    // a container keeps failing
)

// Bounds of what is written about pods: a pod, container or ReplicaSet
// reason and message are written by the kubelet and the API server, but
// anyone who may write a pod's status can put anything there.
const (
	// MaxPodProblems bounds the distinct problems PodProblems returns.
	MaxPodProblems = 8
	// shownPodProblems bounds those the Programmed message lists.
	shownPodProblems = 3
	maxReasonText    = 64
	maxMessageText   = 300
)

// containerTrouble maps a container's waiting reason to the kind of
// trouble. A pull alternates between ErrImagePull and ImagePullBackOff, a
// crash between RunContainerError, CrashLoopBackOff and running: each kind
// is one problem, so its Event is not repeated at every turn.
var containerTrouble = map[string]string{
	"ErrImagePull": "image", "ImagePullBackOff": "image", "ErrImageNeverPull": "image", "InvalidImageName": "image",
	"CreateContainerConfigError": "create", "CreateContainerError": "create",
	"CrashLoopBackOff": "crash", "RunContainerError": "crash",
}

// PodProblems returns the distinct problems of the pods and ReplicaSets of
// a Gateway's SLLBR Deployments (the caller checked the owner chain),
// sorted by key, at most MaxPodProblems; each problem's message is the
// newest pod's:
//   - a ReplicaSet that cannot create its pods (ReplicaFailure, e.g.
//     FailedCreate when admission refuses them);
//   - a pod its node refused or stopped (phase Failed with a reason:
//     SysctlForbidden, OutOfcpu, OutOfmemory, NodeAffinity,
//     UnexpectedAdmissionError, Evicted, ...), unless a pod created at the
//     same time or later is ready: failed pods stay behind after the cause
//     is fixed;
//   - a pod no node can take (PodScheduled False/Unschedulable);
//   - a container of a pod that is not ready, init or not, that cannot
//     pull its image, cannot be created, or keeps failing (waiting with a
//     reason of containerTrouble, or running again after a failure).
//
// Pods being deleted and pods that succeeded are left out.
func PodProblems(pods []*corev1.Pod, replicaSets []*appsv1.ReplicaSet) []PodProblem {
	byKey := map[string]PodProblem{}
	add := func(p PodProblem) {
		if _, ok := byKey[p.Key]; !ok {
			byKey[p.Key] = p
		}
	}
	for _, rs := range replicaSets {
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
				add(PodProblem{Key: "ReplicaSet: " + text(c.Reason, maxReasonText), Kind: PodsNotCreated,
					Message: "pods cannot be created: " + reasonMessage(c.Reason, c.Message), Source: rs})
			}
		}
	}
	newestFirst := slices.Clone(pods)
	slices.SortFunc(newestFirst, func(a, b *corev1.Pod) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	newestReady := -1 // index in newestFirst
	for i, p := range newestFirst {
		if isReady(p) && p.DeletionTimestamp == nil {
			newestReady = i
			break
		}
	}
	for _, p := range newestFirst {
		switch {
		case p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || isReady(p):
		case p.Status.Phase == corev1.PodFailed:
			stale := newestReady >= 0 && p.CreationTimestamp.Before(&newestFirst[newestReady].CreationTimestamp)
			if p.Status.Reason != "" && !stale {
				add(failedPod(p))
			}
		default:
			if c := podCondition(p, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				add(PodProblem{Key: "pod: Unschedulable", Kind: PodsUnschedulable,
					Message: "pods cannot be scheduled: " + text(c.Message, maxMessageText), Source: p})
			}
			for _, cp := range containerProblems(p) {
				add(cp)
			}
		}
	}
	out := make([]PodProblem, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, byKey[k])
	}
	if len(out) > MaxPodProblems {
		out = out[:MaxPodProblems]
	}
	return out
}

// failedPod is the problem of a pod its node refused or stopped.
func failedPod(p *corev1.Pod) PodProblem {
	reason := text(p.Status.Reason, maxReasonText)
	msg := "pods failed on their node: " + reasonMessage(p.Status.Reason, p.Status.Message)
	if reason == "SysctlForbidden" {
		msg += sysctlHint(p)
	}
	return PodProblem{Key: "pod: " + reason, Kind: PodsFailed, Message: msg, Source: p}
}

// containerProblems returns the trouble of the pod's containers.
func containerProblems(p *corev1.Pod) []PodProblem {
	var out []PodProblem
	for _, set := range []struct {
		what     string
		statuses []corev1.ContainerStatus
		specs    []corev1.Container
	}{{"init container", p.Status.InitContainerStatuses, p.Spec.InitContainers}, {"container", p.Status.ContainerStatuses, p.Spec.Containers}} {
		for _, cs := range set.statuses {
			name := set.what + " " + text(cs.Name, maxReasonText)
			w, last := cs.State.Waiting, cs.LastTerminationState.Terminated
			trouble := ""
			if w != nil {
				trouble = containerTrouble[w.Reason]
			} else if cs.State.Running != nil && !cs.Ready && cs.RestartCount > 0 && last != nil {
				trouble = "crash" // between two back-offs
			}
			switch trouble {
			case "image":
				image := text(imageOf(set.specs, cs), maxMessageText)
				out = append(out, PodProblem{Key: name + ": image " + image, Kind: ImagePullFailing,
					Message: name + " cannot pull its image: " + reasonMessage(w.Reason, w.Message), Source: p})
			case "create":
				out = append(out, PodProblem{Key: name + ": create", Kind: ContainerNotCreated,
					Message: name + " cannot be created: " + reasonMessage(w.Reason, w.Message), Source: p})
			case "crash":
				out = append(out, PodProblem{Key: name + ": crash", Kind: ContainerFailing,
					Message: name + " keeps failing: " + crash(w, last), Source: p})
			}
		}
	}
	return out
}

// crash describes a container that keeps failing by its last termination,
// else by its waiting reason (it never started).
func crash(w *corev1.ContainerStateWaiting, last *corev1.ContainerStateTerminated) string {
	if last == nil {
		return reasonMessage(w.Reason, w.Message)
	}
	s := fmt.Sprintf("last exit code %d", last.ExitCode)
	if last.Reason != "" {
		s += " (" + text(last.Reason, maxReasonText) + ")"
	}
	if last.Message != "" {
		s += ": " + text(last.Message, maxMessageText)
	}
	return s
}

func imageOf(specs []corev1.Container, cs corev1.ContainerStatus) string {
	for _, c := range specs {
		if c.Name == cs.Name {
			return c.Image
		}
	}
	return cs.Image
}

// safeSysctls are the sysctls the kubelet allows without
// --allowed-unsafe-sysctls (Kubernetes 1.33); naming one there too is
// harmless, so an older list errs on the side that works.
var safeSysctls = []string{
	"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
}

// sysctlHint says what to change on the kubelet for the pod's unsafe
// sysctls.
func sysctlHint(p *corev1.Pod) string {
	var unsafe []string
	if sc := p.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			if name := text(s.Name, maxReasonText); !slices.Contains(safeSysctls, name) && !slices.Contains(unsafe, name) {
				unsafe = append(unsafe, name)
			}
		}
	}
	flag := "--allowed-unsafe-sysctls"
	if len(unsafe) > 0 {
		flag += "=" + text(strings.Join(unsafe, ","), maxMessageText)
	}
	return "; allow the SLLBR pods' unsafe sysctls on the kubelet of every node that may run them: " + flag +
		` (or allowedUnsafeSysctls in its configuration file; docs/deploy.md, "Sysctls")`
}

// reasonMessage formats "reason: message", each bounded to one line.
func reasonMessage(reason, message string) string {
	r, m := text(reason, maxReasonText), text(message, maxMessageText)
	switch {
	case r == "":
		return m
	case m == "":
		return r
	}
	return r + ": " + m
}

// text makes s one line of valid UTF-8 of at most max bytes: control
// characters and runs of white space become one space.
func text(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	return clipTo(s, max)
}

func isReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
