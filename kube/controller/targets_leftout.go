package controller

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/controller/status"
	"github.com/sllbrd/sllbrd/kube/targetpod"
	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

// What the controller leaves out of target pods' configurations
// (targetpod.Admit) and where it says so: a Warning Event on the pod, and
// the TargetsConfigured condition of each L34Route concerned, computed
// from the cache over the pods of the route's Service (routeLeftOut), the
// same way for every replica and every leader.

// targetView is what computing target configurations reads, shared by the
// pods of one reconcile: the Services sorted by name, the L34Routes by
// namespace/name, each Gateway translated once.
type targetView struct {
	svcs   []*corev1.Service
	routes map[string]*v1alpha1.L34Route
	states map[string]*model.State
}

func (c *Controller) newTargetView() *targetView {
	svcs, _ := c.inf.services.List(labels.Everything())
	slices.SortFunc(svcs, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	v := &targetView{svcs: svcs, routes: map[string]*v1alpha1.L34Route{}, states: map[string]*model.State{}}
	for _, r := range listCustom[*v1alpha1.L34Route](c.inf.routes) {
		v.routes[r.Namespace+"/"+r.Name] = r
	}
	return v
}

// state is the Gateway's translation (nil when it is gone).
func (v *targetView) state(c *Controller, gateway string) *model.State {
	if s, done := v.states[gateway]; done {
		return s
	}
	var state *model.State
	if gw, err := c.inf.gateways.Get(gateway); err == nil {
		routes := make([]*v1alpha1.L34Route, 0, len(v.routes))
		for _, r := range v.routes {
			routes = append(routes, r)
		}
		state, _, _ = translate.Translate(translate.Snapshot{Gateway: gw, Routes: routes, Services: v.svcs})
	}
	v.states[gateway] = state
	return state
}

// serviceClaims returns the destinations of the Gateway's accepted routes
// to service, each with its route's name and creation time.
func (v *targetView) serviceClaims(c *Controller, gateway, service string) []targetpod.Claim {
	state := v.state(c, gateway)
	if state == nil {
		return nil
	}
	var out []targetpod.Claim
	for _, r := range state.Routes {
		obj := v.routes[r.Name] // r.Name is namespace/name
		if r.Service != service || obj == nil {
			continue
		}
		for _, d := range r.Destinations {
			out = append(out, targetpod.Claim{VIP: d, Route: obj.Name, Created: obj.CreationTimestamp.Time})
		}
	}
	return out
}

// keptCandidate is the pod's current entry of a Gateway kept as it is.
func keptCandidate(g targetpod.Gateway) *targetpod.Candidate {
	c := &targetpod.Candidate{Name: g.Name, Subnets: g.Subnets, NextHops: g.NextHops}
	for _, v := range g.VIPs {
		c.Claims = append(c.Claims, targetpod.Claim{VIP: v, Created: time.Time{}})
	}
	return c
}

// reportLeftOut says on the pod what its configuration leaves out, and
// queues the L34Routes whose TargetsConfigured condition may change: those
// left out on this pod, and those whose condition says something is left
// out somewhere (it may be over). The conditions are computed from the
// cache (routeLeftOut), so the queueing only makes them timely.
func (c *Controller) reportLeftOut(pod *corev1.Pod, leftOut []targetpod.Rejection) {
	routes := map[string]bool{}
	var lines []string
	for _, r := range leftOut {
		lines = append(lines, r.String())
		if r.Route != "" {
			routes[r.Route] = true
		}
	}
	if len(lines) > 0 {
		c.events.warn(pod, ReasonTargetNetworkPartial, strings.Join(lines, "; "))
	} else {
		c.events.resolved(pod, ReasonTargetNetworkPartial)
	}
	for _, r := range listCustom[*v1alpha1.L34Route](c.inf.routes) {
		if routes[r.Name] || reportsLeftOut(r) {
			c.queue.Add(Key{KindL34Route, r.Name})
		}
	}
}

// reportsLeftOut reports whether one of our parent entries of r says that
// something is left out.
func reportsLeftOut(r *v1alpha1.L34Route) bool { return leftOutCondition(r, "") != nil }

// leftOutCondition returns the TargetsConfigured condition of our parent
// entry of r for gateway ("": any) when it says that something is left
// out, else nil.
func leftOutCondition(r *v1alpha1.L34Route, gateway string) *metav1.Condition {
	for _, p := range r.Status.Parents {
		if p.ControllerName != kube.ControllerName || (gateway != "" && string(p.ParentRef.Name) != gateway) {
			continue
		}
		for i, cond := range p.Conditions {
			if cond.Type == status.TypeTargetsConfigured && cond.Status == metav1.ConditionFalse && cond.Reason != status.ReasonNotAccepted {
				return &p.Conditions[i]
			}
		}
	}
	return nil
}

// gatewayRoutesLeftOut lists the Gateway's L34Routes that say something of
// them is left out of target pods (their TargetsConfigured condition), for
// the Gateway's own condition. A route's condition changes its status,
// which requeues the Gateways it names (onL34Route).
func (c *Controller) gatewayRoutesLeftOut(gateway string) []status.RouteLeftOut {
	var out []status.RouteLeftOut
	for _, r := range listCustom[*v1alpha1.L34Route](c.inf.routes) {
		if cond := leftOutCondition(r, gateway); cond != nil {
			out = append(out, status.RouteLeftOut{Route: r.Namespace + "/" + r.Name, Reason: cond.Reason, Message: cond.Message})
		}
	}
	return out
}

// routeLeftOut returns what of r, a route of the owned Gateway gateway,
// is left out of the configuration of each target pod of its Service.
func (c *Controller) routeLeftOut(v *targetView, r *v1alpha1.L34Route, gateway string) []status.TargetProblem {
	if len(r.Spec.BackendRefs) != 1 {
		return nil
	}
	svc, err := c.inf.services.Get(string(r.Spec.BackendRefs[0].Name))
	if err != nil || svc.Labels[kube.LabelServiceProxyName] != gateway || podSelector(svc) == nil {
		return nil
	}
	pods, _ := c.inf.pods.List(podSelector(svc))
	var out []status.TargetProblem
	for _, pod := range pods {
		_, leftOut, err := c.podNetwork(v, pod, pod.Annotations[kube.AnnotationTargetNetwork])
		if err != nil {
			continue // the pod's own reconcile reports it
		}
		for _, rej := range leftOut {
			if rej.Gateway == gateway && rej.Route == r.Name {
				out = append(out, status.TargetProblem{Pod: pod.Name, Reason: rej.Reason, Message: rej.String()})
			}
		}
	}
	return out
}
