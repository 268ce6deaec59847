package endpoints

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// HoldMargin is added to a pod's probe time for the kubelet to write the
// probe's result into the pod's status.
const HoldMargin = 2 * time.Second

// The kubelet's defaults for fields of a probe left at zero (the API server
// fills them in; objects built elsewhere may not have them).
const (
	defaultProbePeriod  = 10 * time.Second
	defaultProbeTimeout = 1 * time.Second
)

// Hold is the readiness hold: an endpoint listed ready stays ready while its
// pod is not ready only because the kubelet has no probe result yet, as
// after a kubelet restart (kubernetes/kubernetes#100277): the pod's Ready
// condition turned False at T (its lastTransitionTime), now < T + hold,
// the pod runs and is not being deleted, its containers are not ready
// (not a readiness gate, nor a lost node: the node lifecycle controller
// sets Ready alone), and every container runs since before T (a
// restart is a real failure and is never held). hold is the pod's longest
// readiness probe time (successThreshold * periodSeconds + timeoutSeconds)
// plus HoldMargin, at most Max; a pod without a readiness probe gets none.
// A pod whose network configuration is not known to be applied
// (Candidate.Unapplied: the node daemon's status annotation no longer says
// ready) is never held: the hold stands in for a probe result only, and
// the kubelet leaves that annotation alone. Everything comes from the
// objects, so every replica decides the same.
type Hold struct {
	Max time.Duration // the cap; 0 disables the hold
	Now time.Time
}

// HoldOutcome is the hold's decision for one endpoint that its slices list
// ready and whose pod is not ready.
type HoldOutcome struct {
	Pod   *corev1.Pod
	Held  bool
	Until time.Time // when held: the moment the hold expires
	Why   string    // when not held: the reason
}

// Apply marks ready (and serving) the candidates the hold keeps, and
// returns its decision for every candidate that is not ready, not being
// deleted, and listed ready in every entry the existing slices have for
// its pod (by UID).
func (h Hold) Apply(cands []Candidate, existing []*discoveryv1.EndpointSlice) []HoldOutcome {
	listed := listedReady(existing)
	var out []HoldOutcome
	for i := range cands {
		c := &cands[i]
		if c.Ready || c.Terminating || !listed[c.Pod.UID] {
			continue
		}
		var until time.Time
		why := c.Unapplied // a pod's configuration must stay applied (the node daemon's status)
		if why == "" {
			until, why = h.expiry(c.Pod)
		}
		o := HoldOutcome{Pod: c.Pod, Held: why == "", Why: why}
		if o.Held {
			o.Until = until
			c.Ready, c.Serving = true, true
		}
		out = append(out, o)
	}
	return out
}

// listedReady returns the pods (by UID) whose every entry in the slices is
// ready: an endpoint that one family's slice already shows not ready is
// not held in the other.
func listedReady(slices []*discoveryv1.EndpointSlice) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID == "" {
				continue
			}
			uid := ep.TargetRef.UID
			ready := ep.Conditions.Ready != nil && *ep.Conditions.Ready
			if prev, seen := out[uid]; seen {
				ready = ready && prev
			}
			out[uid] = ready
		}
	}
	return out
}

// expiry returns when the hold of p expires, or why p is not held.
func (h Hold) expiry(p *corev1.Pod) (time.Time, string) {
	if h.Max <= 0 {
		return time.Time{}, "the readiness hold is disabled"
	}
	if p.DeletionTimestamp != nil {
		return time.Time{}, "the pod is being deleted"
	}
	if p.Status.Phase != corev1.PodRunning {
		return time.Time{}, fmt.Sprintf("the pod's phase is %q", p.Status.Phase)
	}
	ready := condition(p, corev1.PodReady)
	if ready == nil || ready.Status != corev1.ConditionFalse || ready.LastTransitionTime.IsZero() {
		return time.Time{}, "the pod's Ready condition is not False with a lastTransitionTime"
	}
	if c := condition(p, corev1.ContainersReady); c != nil && c.Status == corev1.ConditionTrue {
		return time.Time{}, "the pod's containers are ready: a readiness gate, or the node lifecycle controller, made it not ready"
	}
	hold := probeHold(p)
	if hold == 0 {
		return time.Time{}, "no container has a readiness probe"
	}
	hold = min(hold+HoldMargin, h.Max)
	t := ready.LastTransitionTime.Time
	if why := restarted(p, t); why != "" {
		return time.Time{}, why
	}
	until := t.Add(hold)
	switch {
	case t.After(h.Now.Add(hold)):
		return time.Time{}, fmt.Sprintf("the Ready condition changed at %s, more than the hold (%v) ahead of this clock",
			t.Format(time.RFC3339), hold)
	case !h.Now.Before(until):
		return time.Time{}, fmt.Sprintf("the hold (%v) expired at %s", hold, until.Format(time.RFC3339))
	}
	return until, ""
}

// restarted returns why p's containers do not all run since before t ("" if
// they do): every container, and every restartable (sidecar) init
// container, has a running state that started before t. Times in the API
// have whole seconds: a container started in the same second as t counts
// as started after it.
func restarted(p *corev1.Pod, t time.Time) string {
	statuses := map[string]corev1.ContainerStatus{}
	for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		statuses[s.Name] = s
	}
	for _, c := range longRunning(p) {
		s, ok := statuses[c.Name]
		switch {
		case !ok:
			return fmt.Sprintf("container %s has no status", c.Name)
		case s.State.Running == nil:
			return fmt.Sprintf("container %s is not running", c.Name)
		case !s.State.Running.StartedAt.Time.Before(t):
			return fmt.Sprintf("container %s started at %s, not before the pod turned not ready at %s",
				c.Name, s.State.Running.StartedAt.Format(time.RFC3339), t.Format(time.RFC3339))
		}
	}
	return ""
}

// probeHold returns the longest time the kubelet may take to report a
// readiness probe's success after it starts probing a container: up to one
// period before the first probe, successThreshold probes, the last one's
// timeout. 0 when no container has a readiness probe.
func probeHold(p *corev1.Pod) time.Duration {
	var longest time.Duration
	for _, c := range longRunning(p) {
		pr := c.ReadinessProbe
		if pr == nil {
			continue
		}
		period, timeout := seconds(pr.PeriodSeconds, defaultProbePeriod), seconds(pr.TimeoutSeconds, defaultProbeTimeout)
		longest = max(longest, time.Duration(max(pr.SuccessThreshold, 1))*period+timeout)
	}
	return longest
}

// longRunning returns the containers that run for the pod's life: its
// containers and its restartable (sidecar) init containers.
func longRunning(p *corev1.Pod) []corev1.Container {
	var out []corev1.Container
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return append(out, p.Spec.Containers...)
}

func seconds(n int32, otherwise time.Duration) time.Duration {
	if n <= 0 {
		return otherwise
	}
	return time.Duration(n) * time.Second
}

func condition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
