package controller

import (
	"log/slog"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/kube/controller/endpoints"
)

// holdReadiness applies the readiness hold to a Service's candidates (see
// endpoints.Hold), records how many it holds, and requeues the Service for
// the moment the first hold expires: no other event may come then.
func (c *Controller) holdReadiness(service string, cands []endpoints.Candidate, existing []*discoveryv1.EndpointSlice) {
	outcomes := endpoints.Hold{Max: c.holdMax, Now: time.Now()}.Apply(cands, existing)
	held := 0
	var next time.Time
	for _, o := range outcomes {
		if o.Held {
			held++
			if next.IsZero() || o.Until.Before(next) {
				next = o.Until
			}
		}
	}
	c.holds.log(c.log, service, cands, outcomes)
	c.metrics.SetServiceHeld(service, held)
	if held > 0 {
		c.queue.AddAfter(Key{KindService, service}, time.Until(next))
	}
}

// forgetService drops what the controller remembers of a Service that is
// gone or no longer handled.
func (c *Controller) forgetService(service string) {
	c.metrics.ForgetService(service)
	c.holds.forget(service)
}

// holdLog remembers which pods each Service holds, only to log when a hold
// starts and ends; the hold itself is decided from the objects alone.
type holdLog struct {
	mu   sync.Mutex
	held map[string]map[types.UID]string // service -> pod UID -> pod name
}

func newHoldLog() *holdLog { return &holdLog{held: map[string]map[types.UID]string{}} }

// log logs at debug the holds that start and end in this reconcile of
// service.
func (h *holdLog) log(log *slog.Logger, service string, cands []endpoints.Candidate, outcomes []endpoints.HoldOutcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	before := h.held[service]
	now := map[types.UID]string{}
	why := map[types.UID]string{}
	for _, o := range outcomes {
		if !o.Held {
			why[o.Pod.UID] = o.Why
			continue
		}
		now[o.Pod.UID] = o.Pod.Name
		if _, was := before[o.Pod.UID]; !was {
			log.Debug("readiness hold starts: the endpoint stays ready while its pod waits for a probe result",
				"service", service, "pod", o.Pod.Name, "until", o.Until)
		}
	}
	for uid, name := range before {
		if _, still := now[uid]; !still {
			log.Debug("readiness hold ends", "service", service, "pod", name, "reason", endReason(uid, cands, why))
		}
	}
	if len(now) == 0 {
		delete(h.held, service)
		return
	}
	h.held[service] = now
}

// endReason says why the pod uid is no longer held.
func endReason(uid types.UID, cands []endpoints.Candidate, why map[types.UID]string) string {
	if w, ok := why[uid]; ok {
		return w
	}
	for _, c := range cands {
		switch {
		case c.Pod.UID != uid:
		case c.Ready:
			return "the pod is ready again"
		case c.Terminating:
			return "the pod is being deleted"
		default:
			return "its slices no longer list it ready"
		}
	}
	return "the pod is no longer an endpoint"
}

func (h *holdLog) forget(service string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, service)
}
