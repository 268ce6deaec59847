package controller_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller/endpoints"
)

// TestIntegrationReadinessHold plays a kubelet restart on Pod objects: the
// kubelet reports every pod with a readiness probe not ready, with the same
// running containers, until its first probe. The controller runs with the
// default hold cap (30 s).
func TestIntegrationReadinessHold(t *testing.T) {
	const holdNS = "sllbrd-ctl-hold"
	e := newEnv(t, holdNS)
	e.createClass()
	e.createGateway(gatewayObject("sllb-a"))
	r := e.startController("only")
	e.waitLeading(r)
	held := func(service string) float64 {
		return metricValue(t, r.metrics, "sllbrd_controller_service_endpoints_held", map[string]string{"service": service})
	}

	t.Run("held while the probe has not run, not ready when the hold expires without another event", func(t *testing.T) {
		hold := 3*time.Second + endpoints.HoldMargin // a probe every 2 s, timeout 1 s
		pod, events := e.probedEndpoint("expire", 51, 2, sidecarPod)
		wrote := time.Now()
		e.writeKubeletStatus(pod, false, startedAt(pod)) // the kubelet restarted: no probe result yet
		e.waitFor("the hold counted", func() (bool, string) { return held("service-expire") == 1, "" })
		waitSliceReady(t, events, pod.Name, false, 2) // the first version that shows it not ready
		took := time.Since(wrote)
		t.Logf("pod not ready -> its endpoints not ready: %v (hold %v; the pod's lastTransitionTime has whole seconds)", took, hold)
		if took < hold-time.Second-250*time.Millisecond || took > hold+15*time.Second {
			t.Errorf("the endpoints turned not ready %v after the pod, want when the hold (%v) expires", took, hold)
		}
		e.waitFor("no hold counted", func() (bool, string) { return held("service-expire") == 0, "" })
		if ep := e.endpoints("service-expire")[pod.Name]; ep.ready || ep.serving || ep.terminating || ep.mixed {
			t.Errorf("after the hold: %s, want not ready, not serving", ep)
		}
	})

	t.Run("a restarted container is not ready at once", func(t *testing.T) {
		pod, events := e.probedEndpoint("restart", 52, 20, sidecarPod) // its hold would be 23 s
		wrote := time.Now()
		e.writeKubeletStatus(pod, false, time.Now()) // the container crashed and started again
		waitNotReadyAtOnce(t, events, pod.Name, wrote, "a pod not ready with a restarted container")
		if n := held("service-restart"); n != 0 {
			t.Errorf("%v endpoints counted held", n)
		}
	})

	t.Run("a container that restarts during the hold ends it at once", func(t *testing.T) {
		pod, events := e.probedEndpoint("crash", 54, 20, sidecarPod) // a 23 s hold
		pod = e.writeKubeletStatus(pod, false, startedAt(pod))
		e.waitFor("the hold counted", func() (bool, string) { return held("service-crash") == 1, "" })
		time.Sleep(time.Second) // the restart's startedAt is a later second than the Ready condition's change
		wrote := time.Now()
		e.writeKubeletStatus(pod, false, time.Now()) // Ready stays False since the same time
		waitNotReadyAtOnce(t, events, pod.Name, wrote, "a container restarted while held")
		e.waitFor("no hold counted", func() (bool, string) { return held("service-crash") == 0, "" })
	})

	t.Run("the node daemon's pod: held while its status stays ready, not ready at once when it says not ready", func(t *testing.T) {
		pod, events := e.probedEndpoint("node", 55, 20, appliedPod) // a 23 s hold
		e.writeKubeletStatus(pod, false, startedAt(pod))            // the kubelet restarted; the daemon's status stays
		e.waitFor("the hold counted", func() (bool, string) { return held("service-node") == 1, "" })
		if ep := e.endpoints("service-node")[pod.Name]; !ep.ready || !ep.serving {
			t.Errorf("held: %s, want ready and serving", ep)
		}
		wrote := time.Now()
		e.setAnnotation(pod.Name, kube.AnnotationTargetNetworkStatus, `{"version":1,"observedGeneration":2,"ready":false}`)
		waitNotReadyAtOnce(t, events, pod.Name, wrote, "the daemon's status not ready while held")
		e.waitFor("no hold counted", func() (bool, string) { return held("service-node") == 0, "" })
		if ep := e.endpoints("service-node")[pod.Name]; ep.ready || ep.serving {
			t.Errorf("after the status said not ready: %s, want not ready, not serving", ep)
		}
	})

	t.Run("ready again within the hold: never not ready in any version of the slices", func(t *testing.T) {
		hold := 4*time.Second + endpoints.HoldMargin // a probe every 3 s, timeout 1 s
		pod, events := e.probedEndpoint("back", 53, 3, sidecarPod)
		started := startedAt(pod)
		wrote := time.Now()
		pod = e.writeKubeletStatus(pod, false, started)
		e.waitFor("the hold counted", func() (bool, string) { return held("service-back") == 1, "" })
		time.Sleep(time.Second)
		e.writeKubeletStatus(pod, true, started) // the first probe succeeded
		e.waitFor("no hold counted", func() (bool, string) { return held("service-back") == 0, "" })
		// Past the moment the hold would have expired, and a little more.
		seen := sliceVersionsUntil(t, events, wrote.Add(hold+3*time.Second))
		notReady := 0
		for _, s := range seen {
			for _, ep := range s.Endpoints {
				if ep.TargetRef != nil && ep.TargetRef.Name == pod.Name && !*ep.Conditions.Ready {
					notReady++
					t.Errorf("slice %s version %s lists %s not ready", s.Name, s.ResourceVersion, pod.Name)
				}
			}
		}
		if len(seen) < 2 {
			t.Errorf("the watch saw %d versions of the slices, want at least both families' current ones", len(seen))
		}
		t.Logf("%d versions of the slices seen, %d with %s not ready", len(seen), notReady, pod.Name)
	})
}

// Annotations of the probed pods: a sidecar's pod (its probe says when its
// network configuration is applied), and the node daemon's pod once the
// daemon has applied it.
var (
	sidecarPod = map[string]string{kube.AnnotationTargetAgent: kube.TargetAgentSidecar}
	appliedPod = map[string]string{kube.AnnotationTargetNetworkStatus: `{"version":1,"observedGeneration":1,"ready":true}`}
)

// probedEndpoint creates Service service-<name> and its pod <name>-1
// (addresses 169.111.100.<octet> and fd00:111::<octet>, a readiness probe
// every period seconds, the annotations agent), waits until its endpoints
// are ready and watches the slices from there.
func (e *env) probedEndpoint(name string, octet int, period int32, agent map[string]string) (*corev1.Pod, <-chan watch.Event) {
	e.t.Helper()
	service, podName := "service-"+name, name+"-1"
	e.createService(service, "sllb-a", name, 0)
	annotations := maps.Clone(agent)
	annotations[kube.AnnotationNetworkStatus] = networkStatus(e.ns+"/"+nadName, fmt.Sprintf("169.111.100.%d", octet), fmt.Sprintf("fd00:111::%d", octet))
	pod := e.createProbedPod(podName, name, annotations, period)
	e.waitEndpoints(service, podName+" ready", func(eps map[string]endpoint) bool { return eps[podName].ready })
	return pod, e.watchSlices(service)
}

// waitNotReadyAtOnce waits for the slices of both families to show pod not
// ready, and fails when that took more than 5 s from since.
func waitNotReadyAtOnce(t *testing.T, events <-chan watch.Event, pod string, since time.Time, what string) {
	t.Helper()
	waitSliceReady(t, events, pod, false, 2)
	took := time.Since(since)
	t.Logf("%s -> its endpoints not ready: %v", what, took)
	if took > 5*time.Second {
		t.Errorf("%s: the endpoints turned not ready %v later, want at once (a hold would last 23 s)", what, took)
	}
}

// startedAt is when the pod's container "app" started running.
func startedAt(pod *corev1.Pod) time.Time {
	return pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
}

// createProbedPod creates a pod of app with annotations whose container
// "app" has a readiness probe every period seconds (timeout 1 s), then
// writes its status as the kubelet would: running since a minute ago, ready.
func (e *env) createProbedPod(name, app string, annotations map[string]string, period int32) *corev1.Pod {
	e.t.Helper()
	probe := &corev1.Probe{PeriodSeconds: period, TimeoutSeconds: 1,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.org/app:1", ReadinessProbe: probe}}},
	}
	got, err := e.kube.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Pod %s: %v", name, err)
	}
	e.t.Cleanup(func() { _ = e.kube.CoreV1().Pods(e.ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return e.writeKubeletStatus(got, true, time.Now().Add(-time.Minute))
}

// writeKubeletStatus writes the pod's status as the kubelet does: Running,
// Ready and ContainersReady as ready (since now, or since they last changed
// when they do not), its container "app" running since started (restarted
// once when started is after the container's previous start).
func (e *env) writeKubeletStatus(pod *corev1.Pod, ready bool, started time.Time) *corev1.Pod {
	e.t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	now := metav1.Now()
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == status {
			now = c.LastTransitionTime
		}
	}
	next := pod.DeepCopy()
	next.Status.Phase = corev1.PodRunning
	next.Status.PodIP = "10.244.1.7"
	next.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.7"}}
	next.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: status, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: status, LastTransitionTime: now},
	}
	cs := corev1.ContainerStatus{Name: "app", Image: "example.org/app:1", Ready: ready, Started: &ready,
		ContainerID: "containerd://" + string(pod.UID),
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}
	if prev := pod.Status.ContainerStatuses; len(prev) == 1 && prev[0].State.Running != nil &&
		started.After(prev[0].State.Running.StartedAt.Add(time.Second)) {
		cs.RestartCount = prev[0].RestartCount + 1
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 137, Reason: "Error", StartedAt: prev[0].State.Running.StartedAt, FinishedAt: metav1.NewTime(started)}}
	}
	next.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	got, err := e.kube.CoreV1().Pods(e.ns).UpdateStatus(e.ctx, next, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatalf("update status of Pod %s: %v", pod.Name, err)
	}
	return got
}

// watchSlices watches the Service's slices from their current versions
// (each is sent first) until the test ends.
func (e *env) watchSlices(service string) <-chan watch.Event {
	e.t.Helper()
	sel := labels.SelectorFromSet(labels.Set{kube.LabelServiceName: service})
	w, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Watch(e.ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Stop)
	return w.ResultChan()
}

// sliceVersionsUntil returns every version of a slice the watch shows until
// the deadline.
func sliceVersionsUntil(t *testing.T, events <-chan watch.Event, deadline time.Time) []*discoveryv1.EndpointSlice {
	t.Helper()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var out []*discoveryv1.EndpointSlice
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("watch ended")
			}
			if s, isSlice := ev.Object.(*discoveryv1.EndpointSlice); isSlice && ev.Type != watch.Deleted {
				out = append(out, s)
			}
		case <-timer.C:
			return out
		}
	}
}
