package endpoints

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/sllbrd/sllbrd/kube"
)

// notReadyAt is when the pods of the hold tests turned not ready.
var notReadyAt = time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)

// probe is a readiness probe every period seconds with a timeout.
func probe(period, timeout int32) *corev1.Probe {
	return &corev1.Probe{PeriodSeconds: period, TimeoutSeconds: timeout, SuccessThreshold: 1, FailureThreshold: 3,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz"}}}
}

// running is the status of container name running since started.
func running(name string, started time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{
		StartedAt: metav1.NewTime(started)}}}
}

// heldPod is a dual-stack pod as the kubelet leaves it right after its
// restart: Running, Ready and ContainersReady False since notReadyAt, its
// container "app" (readiness probe every 2 s, timeout 1 s: a 5 s hold)
// running since an hour before.
func heldPod() *corev1.Pod {
	p := newPod("p", status(ns+"/macvlan-nad-1", "169.111.100.11", "fd00:111::11"))
	p.Spec.Containers = []corev1.Container{{Name: "app", ReadinessProbe: probe(2, 1)}}
	since := metav1.NewTime(notReadyAt)
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: since},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, LastTransitionTime: since},
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app", notReadyAt.Add(-time.Hour))}
	return p
}

// nodeMode makes a pod the node daemon's, with the status annotation status
// (none when "").
func nodeMode(status string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		delete(p.Annotations, kube.AnnotationTargetAgent)
		delete(p.Annotations, kube.AnnotationTargetNetworkStatus)
		if status != "" {
			p.Annotations[kube.AnnotationTargetNetworkStatus] = status
		}
	}
}

// listed returns the slices the controller wrote while pod was ready (or
// not): one per family it has an address in.
func listed(pod *corev1.Pod, ready bool) []*discoveryv1.EndpointSlice {
	addrs, _, _ := PodAddresses(pod, gw)
	ep := Endpoint{Candidate: Candidate{Pod: pod, Addrs: addrs, Ready: ready, Serving: ready}}
	return PlanSlices(svc, []Endpoint{ep}, nil).Create
}

func TestHold(t *testing.T) {
	const capped = 30 * time.Second
	at := func(d time.Duration) time.Time { return notReadyAt.Add(d) }
	sidecar := corev1.Container{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), ReadinessProbe: probe(10, 1)}
	for _, tc := range []struct {
		name   string
		edit   func(*corev1.Pod)
		slices func(*corev1.Pod) []*discoveryv1.EndpointSlice // default: listed ready
		now    time.Time                                      // default: a second after notReadyAt
		max    time.Duration                                  // default: capped
		until  time.Time                                      // held until; zero: not held
		why    string                                         // part of the reason, when not held
		none   bool                                           // no decision: the hold does not concern the pod
	}{
		{name: "held: running containers, no probe result yet", until: at(5 * time.Second)},
		{name: "held until period*successThreshold + timeout + margin", until: at(9 * time.Second),
			edit: func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe.SuccessThreshold = 3 }},
		{name: "held: the probe's fields default as in the kubelet", until: at(13 * time.Second),
			edit: func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{} }},
		{name: "held: the longest probe of the pod's containers and sidecars", until: at(13 * time.Second),
			edit: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "plain"})
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}, sidecar}
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, running("plain", at(-time.Hour)))
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}},
					running("proxy", at(-time.Hour))}
			}},
		{name: "held at most the cap", until: at(capped),
			edit: func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe = probe(60, 5) }},
		{name: "held: the last moment", now: at(5*time.Second - time.Nanosecond), until: at(5 * time.Second)},
		{name: "held: the kubelet's clock a little ahead", now: at(-4 * time.Second), until: at(5 * time.Second)},
		{name: "held: the node daemon's pod, its status still ready (the kubelet restarted, not the daemon)",
			until: at(5 * time.Second), edit: nodeMode(statusReady)},
		{name: "held: the node daemon's pod, its status ready, marked node", until: at(5 * time.Second),
			edit: func(p *corev1.Pod) {
				nodeMode(statusAgent)(p)
				p.Annotations[kube.AnnotationTargetAgent] = kube.TargetAgentNode
			}},

		{name: "not held: past the hold", now: at(5 * time.Second), why: "the hold (5s) expired at 2026-01-01T00:10:05Z"},
		{name: "not held: the cap is 0", max: -1, why: "disabled"},
		{name: "not held: the node daemon's status says ready false", why: "says ready: false", edit: nodeMode(statusNotReady)},
		{name: "not held: the node daemon's status is gone", why: "has not applied", edit: nodeMode("")},
		{name: "not held: an unknown agent", why: "no agent applies",
			edit: func(p *corev1.Pod) { p.Annotations[kube.AnnotationTargetAgent] = "both" }},
		{name: "not held: a container restarted (crash loop)", why: "container app is not running",
			edit: func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			}},
		{name: "not held: a container started after the pod turned not ready", why: "container app started at 2026-01-01T00:10:01Z",
			edit: func(p *corev1.Pod) { p.Status.ContainerStatuses[0] = running("app", at(time.Second)) }},
		{name: "not held: a container started in the same second", why: "not before the pod turned not ready at 2026-01-01T00:10:00Z",
			edit: func(p *corev1.Pod) { p.Status.ContainerStatuses[0] = running("app", at(0)) }},
		{name: "not held: a sidecar restarted", why: "container proxy started",
			edit: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{sidecar}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{running("proxy", at(time.Second))}
			}},
		{name: "not held: a container without status", why: "container late has no status",
			edit: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "late"}) }},
		{name: "not held: no readiness probe", why: "no container has a readiness probe",
			edit: func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe = nil }},
		{name: "not held: a readiness gate, not the containers", why: "a readiness gate",
			edit: func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionTrue }},
		{name: "not held: a lost node (the node lifecycle controller sets Ready alone)", why: "a readiness gate",
			edit: func(p *corev1.Pod) {
				p.Status.Conditions[1] = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}
			}},
		{name: "not held: the phase is not Running", why: `phase is "Pending"`,
			edit: func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }},
		{name: "not held: Ready Unknown", why: "Ready condition is not False",
			edit: func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionUnknown }},
		{name: "not held: no lastTransitionTime", why: "Ready condition is not False",
			edit: func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.Time{} }},
		{name: "not held: the Ready condition changes further ahead than the hold", now: at(-6 * time.Second),
			why: "more than the hold (5s) ahead of this clock"},

		{name: "no decision: terminating", none: true,
			edit: func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(at(0))) }},
		{name: "no decision: the slices list it not ready (a new pod)", none: true,
			slices: func(p *corev1.Pod) []*discoveryv1.EndpointSlice { return listed(p, false) }},
		{name: "no decision: no slice yet", none: true,
			slices: func(*corev1.Pod) []*discoveryv1.EndpointSlice { return nil }},
		{name: "no decision: one family's slice already says not ready", none: true,
			slices: func(p *corev1.Pod) []*discoveryv1.EndpointSlice {
				ss := listed(p, true)
				ss[1].Endpoints[0].Conditions.Ready = ptr.To(false)
				return ss
			}},
		{name: "no decision: the slices list another pod of the same name", none: true,
			slices: func(p *corev1.Pod) []*discoveryv1.EndpointSlice {
				old := p.DeepCopy()
				old.UID = types.UID("uid-previous")
				return listed(old, true)
			}},
		{name: "no decision: the pod is ready", none: true,
			edit: func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionTrue }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := heldPod()
			if tc.edit != nil {
				tc.edit(pod)
			}
			existing := listed(heldPod(), true)
			if tc.slices != nil {
				existing = tc.slices(pod)
			}
			h := Hold{Max: capped, Now: at(time.Second)}
			if tc.max != 0 {
				h.Max = max(tc.max, 0)
			}
			if !tc.now.IsZero() {
				h.Now = tc.now
			}
			cands, _ := Candidates([]*corev1.Pod{pod}, gw)
			wasReady := cands[0].Ready
			got := h.Apply(cands, existing)
			c := cands[0]
			switch {
			case tc.none:
				if len(got) != 0 || c.Ready != wasReady || c.Serving != podReady(pod) {
					t.Fatalf("decisions %v, candidate ready %v serving %v; want none and the pod's conditions", outcomes(got), c.Ready, c.Serving)
				}
			case len(got) != 1 || got[0].Pod != pod:
				t.Fatalf("decisions %v, want one for the pod", outcomes(got))
			case !tc.until.IsZero():
				if !got[0].Held || !got[0].Until.Equal(tc.until) || got[0].Why != "" || !c.Ready || !c.Serving || c.Terminating {
					t.Fatalf("decision %v, candidate ready %v serving %v terminating %v; want held until %s, ready and serving",
						outcomes(got), c.Ready, c.Serving, c.Terminating, tc.until)
				}
			default:
				if got[0].Held || !got[0].Until.IsZero() || !strings.Contains(got[0].Why, tc.why) || c.Ready || c.Serving {
					t.Fatalf("decision %v, candidate ready %v serving %v; want not held because %q", outcomes(got), c.Ready, c.Serving, tc.why)
				}
			}
		})
	}
}

// TestHoldLeavesOtherPodsAlone: in a Service's reconcile only the pods the
// hold concerns change.
func TestHoldLeavesOtherPodsAlone(t *testing.T) {
	held := heldPod()
	fresh := newPod("fresh", status(ns+"/macvlan-nad-1", "169.111.100.12"))
	fresh.Status.Conditions[0].Status = corev1.ConditionFalse
	ready := newPod("ready", status(ns+"/macvlan-nad-1", "169.111.100.13"))
	var eps []Endpoint
	for i, p := range []*corev1.Pod{held, ready} {
		addrs, _, _ := PodAddresses(p, gw)
		eps = append(eps, Endpoint{Candidate: Candidate{Pod: p, Addrs: addrs, Ready: true, Serving: true}, ID: i})
	}
	existing := PlanSlices(svc, eps, nil).Create
	cands, _ := Candidates([]*corev1.Pod{held, fresh, ready}, gw)
	got := Hold{Max: 30 * time.Second, Now: notReadyAt.Add(time.Second)}.Apply(cands, existing)
	if len(got) != 1 || got[0].Pod != held || !got[0].Held {
		t.Fatalf("decisions %v, want the held pod's only", outcomes(got))
	}
	for _, c := range cands {
		if want := c.Pod != fresh; c.Ready != want {
			t.Errorf("pod %s ready %v, want %v", c.Pod.Name, c.Ready, want)
		}
	}
}

// outcomes describes decisions briefly.
func outcomes(os []HoldOutcome) []string {
	var out []string
	for _, o := range os {
		out = append(out, fmt.Sprintf("{%s held %v until %s why %q}", o.Pod.Name, o.Held, o.Until.Format(time.RFC3339Nano), o.Why))
	}
	return out
}
