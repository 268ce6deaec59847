package main

import (
	"fmt"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// The soak plays kubelet's readiness probes (deploy/: /readyz every 2 s,
// not ready after 2 failures, ready after 1 success) for the SLLBR Pods
// and the target Pods, so that a process's readiness reaches the API as it
// would in a cluster: the controller takes the SLLBRs' readiness for the
// targets' next hops, and the targets' for the endpoints.

const (
	probePeriod      = 2 * time.Second
	failureThreshold = 2
)

// kubeletProbes is the probes' state, kept by the soak's loop.
type kubeletProbes struct {
	last  time.Time
	fails map[string]int
	// ready is each Pod's Ready condition as last written; a write the API
	// refused (it is down) leaves it, and the next probe writes again.
	ready map[string]bool
	// notReady: Pods whose application container is not ready (the
	// readiness flap), whatever the sidecar says.
	notReady map[string]bool
	// exited: when each controller replica was first seen gone.
	exited map[int]time.Time
}

func newKubeletProbes() *kubeletProbes {
	return &kubeletProbes{fails: map[string]int{}, ready: map[string]bool{}, notReady: map[string]bool{}, exited: map[int]time.Time{}}
}

// probeReadiness probes every running SLLBR and sidecar once a period and
// writes the Ready conditions that changed.
func (s *soakLab) probeReadiness() {
	k := s.kubelet
	if time.Since(k.last) < probePeriod {
		return
	}
	k.last = time.Now()
	s.restartExitedControllers()
	for i, inst := range s.lbs {
		if !s.lbPods[i] {
			continue // scaled down: no Pod
		}
		status, _, err := inst.Get("/readyz")
		s.probed(sllbrPod(i), err == nil && status == 200)
	}
	for i := range s.sidecars {
		name := lab.TargetName(i)
		status, _, err := e2e.GetIn(s.lab, name, sidecarAddr, "/readyz")
		s.probed(name, err == nil && status == 200 && !k.notReady[name])
	}
}

// probed records one probe of pod and writes its condition when it
// changes.
func (s *soakLab) probed(pod string, ok bool) {
	k := s.kubelet
	if ok {
		k.fails[pod] = 0
	} else {
		k.fails[pod]++
	}
	want := k.ready[pod]
	switch {
	case ok:
		want = true
	case k.fails[pod] >= failureThreshold:
		want = false
	}
	if want != k.ready[pod] {
		if err := s.writeReady(pod, want); err != nil {
			s.t.Logf("%s: kubelet: Pod %s Ready %v not written: %v", s.elapsed(), pod, want, err)
		}
	}
}

// writeReady writes pod's Ready condition and records it.
func (s *soakLab) writeReady(pod string, ready bool) error {
	if err := s.updateReady(pod, ready); err != nil {
		return fmt.Errorf("pod %s: %w", pod, err)
	}
	s.kubelet.ready[pod] = ready
	return nil
}

// controllerRestartDelay is how long after its exit the soak's kubelet
// starts a controller replica again (restartPolicy Always): a replica
// exits when it loses the leader Lease, as after an API server outage
// longer than the renew deadline.
const controllerRestartDelay = time.Second

// restartExitedControllers starts again every controller replica that has
// been gone for controllerRestartDelay.
func (s *soakLab) restartExitedControllers() {
	for i, p := range s.ctls {
		select {
		case <-p.done:
		default:
			delete(s.kubelet.exited, i)
			continue
		}
		at, ok := s.kubelet.exited[i]
		if !ok {
			s.kubelet.exited[i] = time.Now()
			continue
		}
		if time.Since(at) >= controllerRestartDelay {
			s.t.Logf("%s: kubelet: controller replica %c exited (%v), starting it again", s.elapsed(), 'a'+i, p.err)
			delete(s.kubelet.exited, i)
			s.startController(i)
		}
	}
}
