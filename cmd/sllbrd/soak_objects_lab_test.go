package main

import (
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// The soak's object faults: L34Route edits and additions, and a burst of
// writes to the objects sllbrd watches. Neither may disturb a flow.

// soakUDPPorts are the ports of the soak-udp route, and the port the
// edit adds for a while.
const (
	soakUDPPorts     = `["5000"]`
	soakUDPPortsEdit = `["5000", "5001"]`
)

// editRoutes adds the L34Route of the lab's second VIPs and a port to
// soak-udp, the route carrying the UDP flows.
func (s *soakLab) editRoutes() error {
	objs, err := kubetest.DecodeObjects([]byte(newVIPRoute))
	if err != nil {
		return err
	}
	if _, err := s.dyn.Create(s.ctx, clusterNS, objs[0]); err != nil {
		return fmt.Errorf("create L34Route %s: %w", objs[0].GetName(), err)
	}
	return s.udpRoutePorts(soakUDPPortsEdit)
}

// revertRoutes undoes editRoutes.
func (s *soakLab) revertRoutes() error {
	routes := s.dyn.Dynamic.Resource(l34RouteGVR).Namespace(clusterNS)
	if err := routes.Delete(s.ctx, "vip-20-0-0-2-multi-ports-a", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete L34Route vip-20-0-0-2-multi-ports-a: %w", err)
	}
	return s.udpRoutePorts(soakUDPPorts)
}

func (s *soakLab) udpRoutePorts(ports string) error {
	patch := fmt.Sprintf(`{"spec":{"destinationPorts":%s}}`, ports)
	_, err := s.dyn.Dynamic.Resource(l34RouteGVR).Namespace(clusterNS).Patch(s.ctx, "soak-udp", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch L34Route soak-udp: %w", err)
	}
	return nil
}

// soakBurstWrites is the size of the write burst.
const soakBurstWrites = 1000

// writeBurstRun is a burst of writes under way.
type writeBurstRun struct {
	done chan struct{}
	err  error // set before done closes
}

// startBurst starts writeBurst in its own goroutine and returns: the
// writes may take seconds, during which the other faults' steps must keep
// their times. The fault is over once they are done (burstDone).
func (s *soakLab) startBurst() error {
	objs := s.burstObjects()
	b := &writeBurstRun{done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.err = s.writeBurst(objs)
	}()
	s.burst = b
	return nil
}

// burstDone reports whether no burst runs, failing the test if the last
// one failed.
func (s *soakLab) burstDone() bool {
	if s.burst == nil {
		return true
	}
	select {
	case <-s.burst.done:
		if s.burst.err != nil {
			s.fails.errorf(s.t, "%s: %v", faultBurst, s.burst.err)
		}
		s.burst = nil
		return true
	default:
		return false
	}
}

// burstObject is an object a burst writes to.
type burstObject struct{ kind, name string }

// burstObjects are the objects sllbrd watches: the Service, the
// L34Routes, the running targets' Pods.
func (s *soakLab) burstObjects() []burstObject {
	objs := []burstObject{{"service", "service-a"}, {"route", "soak-udp"}, {"route", "vip-20-0-0-1-multi-ports-a"},
		{"route", "vip-2001-db8-1-multi-ports-a"}}
	for _, i := range s.activeTargets() {
		objs = append(objs, burstObject{"pod", lab.TargetName(i)})
	}
	return objs
}

// writeBurst writes an annotation soakBurstWrites times, from 8 clients at
// once, round robin over objs. It touches nothing of the soak's state.
func (s *soakLab) writeBurst(objs []burstObject) error {
	var wg sync.WaitGroup
	errs := make(chan error, soakBurstWrites)
	for w := range 8 {
		wg.Go(func() {
			for n := w; n < soakBurstWrites; n += 8 {
				o := objs[n%len(objs)]
				patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"soak.sllbrd.test/write":"%d"}}}`, n))
				var err error
				switch o.kind {
				case "service":
					_, err = s.kube.CoreV1().Services(clusterNS).Patch(s.ctx, o.name, types.MergePatchType, patch, metav1.PatchOptions{})
				case "pod": // deleted meanwhile by a re-creation beside the burst: still a write the API served
					_, err = s.kube.CoreV1().Pods(clusterNS).Patch(s.ctx, o.name, types.MergePatchType, patch, metav1.PatchOptions{})
					if apierrors.IsNotFound(err) {
						err = nil
					}
				case "route":
					_, err = s.dyn.Dynamic.Resource(l34RouteGVR).Namespace(clusterNS).Patch(s.ctx, o.name, types.MergePatchType, patch, metav1.PatchOptions{})
				}
				if err != nil {
					errs <- fmt.Errorf("write %d to %s %s: %w", n, o.kind, o.name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when none
}
