package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller/endpoints"
	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
	"github.com/sllbrd/sllbrd/kube/targetpod"
	"github.com/sllbrd/sllbrd/model"
)

// Event reasons on target pods.
const (
	// ReasonTargetNetworkNotWritten: what the controller computed fails
	// the target's own check (targetpod.Desired.Validate), so nothing is
	// written; Admit makes this a bug to report.
	ReasonTargetNetworkNotWritten = "TargetNetworkNotWritten"
	// ReasonTargetNetworkPartial: parts of the pod's configuration are
	// left out (targetpod.Admit); the note lists what and why.
	ReasonTargetNetworkPartial = "TargetNetworkPartial"
)

// reconcilePod writes the desired network configuration of a pod
// (kube.AnnotationTargetNetwork) from the Services that select it: per
// owned Gateway its VIPs, the addresses of its ready SLLBR pods, a routing
// table and the BFD timing its Services ask for (if any); the annotation
// is removed when no Gateway is left. What the target would refuse is left
// out (targetpod.Admit), reported on the pod and on the L34Routes
// concerned (TargetsConfigured), and the rest is written; the value is
// checked with the target's own check last.
func (c *Controller) reconcilePod(ctx context.Context, name string) error {
	pod, err := c.inf.pods.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	current := pod.Annotations[kube.AnnotationTargetNetwork]
	want, leftOut, err := c.podNetwork(c.newTargetView(), pod, current)
	if err != nil {
		return err
	}
	c.reportLeftOut(pod, leftOut)
	value, changed, err := targetpod.Next(current, want)
	if err == nil && value != "" {
		_, err = targetpod.ParseDesired(value)
	}
	if err != nil {
		c.events.warn(pod, ReasonTargetNetworkNotWritten, err.Error())
		return nil
	}
	c.events.resolved(pod, ReasonTargetNetworkNotWritten)
	if !changed {
		return nil
	}
	return c.patchTargetNetwork(ctx, pod, value)
}

// podNetwork returns the Gateways of the pod's configuration, tables
// unset, and what targetpod.Admit leaves out of it.
func (c *Controller) podNetwork(v *targetView, pod *corev1.Pod, current string) ([]targetpod.Gateway, []targetpod.Rejection, error) {
	cands, liveness, err := c.podCandidates(v, pod, current)
	if err != nil {
		return nil, nil, err
	}
	gws, leftOut := targetpod.Admit(current, cands)
	setLiveness(gws, liveness)
	return gws, leftOut, nil
}

// podCandidates returns the entries of the Gateways the pod is a target
// of, with the route of each VIP, and the BFD timing of each entry
// (targets_liveness.go): the strictest of the Gateway's Services that
// select the pod with probe bfd, routed or not (the SLLBRs probe every
// Service of their Gateway, and find an address dead for all of its
// Services). A Gateway whose annotations are invalid, or whose class is
// unknown, keeps the entry the pod has, BFD timing included (a typo must
// not take the VIPs away).
func (c *Controller) podCandidates(v *targetView, pod *corev1.Pod, current string) ([]targetpod.Candidate, map[string]*targetpod.GatewayLiveness, error) {
	cur, _ := targetpod.ParseDesired(current)
	byName := map[string]*targetpod.Candidate{}
	bfd, kept := bfdTimings{}, map[string]*targetpod.GatewayLiveness{}
	for _, svc := range v.svcs {
		gwName := svc.Labels[kube.LabelServiceProxyName]
		sel := podSelector(svc)
		if gwName == "" || sel == nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		gw, keep, err := c.serviceGateway(svc)
		switch {
		case err != nil:
			return nil, nil, err
		case keep:
			if i := slices.IndexFunc(cur.Gateways, func(g targetpod.Gateway) bool { return g.Name == gwName }); i >= 0 {
				byName[gwName] = keptCandidate(cur.Gateways[i]) // left as it is
				kept[gwName] = cur.Gateways[i].Liveness
			}
			continue
		case gw == nil:
			continue
		}
		if cands, _ := endpoints.Candidates([]*corev1.Pod{pod}, *gw); len(cands) == 0 {
			continue // no address on the Gateway's networks, or finished
		}
		entry := byName[gwName]
		if entry == nil {
			entry = &targetpod.Candidate{Name: gwName, Subnets: gw.Subnets, NextHops: c.sllbrNextHops(*gw)}
			byName[gwName] = entry
		}
		entry.Claims = append(entry.Claims, v.serviceClaims(c, gwName, svc.Name)...)
		bfd.add(gwName, v.serviceLiveness(c, gwName, svc.Name))
	}
	out := make([]targetpod.Candidate, 0, len(byName))
	for _, g := range byName {
		out = append(out, *g)
	}
	liveness := bfd.liveness()
	maps.Copy(liveness, kept)
	return out, liveness, nil
}

// sllbrNextHops returns the addresses, on the Gateway's networks, of its
// ready SLLBR pods: the pods of the Deployment the controller created for
// the Gateway, by owner chain (sllbrNextHopPods). No next hop while the
// Gateway is not in the cache.
func (c *Controller) sllbrNextHops(gw model.Gateway) targetpod.NextHops {
	obj, err := c.inf.gateways.Get(gw.Name)
	if err != nil {
		return targetpod.NextHops{}
	}
	var n targetpod.NextHops
	for _, cand := range endpoints.NextHops(c.sllbrNextHopPods(obj), gw) {
		if !cand.Ready {
			continue
		}
		if cand.Addrs.V4.IsValid() {
			n.IPv4 = append(n.IPv4, cand.Addrs.V4)
		}
		if cand.Addrs.V6.IsValid() {
			n.IPv6 = append(n.IPv6, cand.Addrs.V6)
		}
	}
	return n
}

// sllbrNextHopPods returns the pods that may be next hops of gw (a pod
// made a next hop receives every reply of the Gateway's targets): those of
// a Deployment gw controls by UID (c.deployments), by owner chain
// (nextHopOf). The SLLBR labels narrow the search and decide nothing:
// anyone who may patch a pod can give it those labels.
func (c *Controller) sllbrNextHopPods(gw *gatewayv1.Gateway) []*corev1.Pod {
	ds := c.deployments(gw)
	if len(ds) == 0 {
		return nil
	}
	pods, _ := c.inf.pods.List(labels.SelectorFromSet(sllbr.Selector(gw.Name)))
	return slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return !c.nextHopOf(p, ds) })
}

// nextHopOf reports whether p is a pod of one of ds (sllbr.PodOf: owner
// chain by UID, and the ServiceAccount of its ReplicaSet's template).
func (c *Controller) nextHopOf(p *corev1.Pod, ds []*appsv1.Deployment) bool {
	return slices.ContainsFunc(ds, func(d *appsv1.Deployment) bool { return sllbr.PodOf(p, d, c.inf.replicaSets) })
}

// patchTargetNetwork writes (or, value "", removes) the pod's desired
// network annotation with a JSON merge patch of that key, conditional on
// the resourceVersion read: a decision made from a stale cache fails.
func (c *Controller) patchTargetNetwork(ctx context.Context, pod *corev1.Pod, value string) error {
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": pod.ResourceVersion,
		"annotations":     map[string]any{kube.AnnotationTargetNetwork: v},
	}})
	if err != nil {
		return err
	}
	_, err = c.kube.CoreV1().Pods(c.namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch %s of Pod %s: %w", kube.AnnotationTargetNetwork, pod.Name, err)
	}
	return nil
}
