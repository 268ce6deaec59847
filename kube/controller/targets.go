package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/controller/endpoints"
	"github.com/sllbrd/sllbrd/kube/target"
	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

// ReasonTargetNetworkNotWritten is the Event reason on a pod whose
// network configuration cannot be written (more Gateways than tables).
const ReasonTargetNetworkNotWritten = "TargetNetworkNotWritten"

// reconcilePod writes the desired network configuration of a pod
// (kube.AnnotationTargetNetwork) from the Services that select it: per
// owned Gateway its VIPs, the addresses of its ready SLLBR pods and a
// routing table; the annotation is removed when no Gateway is left.
func (c *Controller) reconcilePod(ctx context.Context, name string) error {
	pod, err := c.inf.pods.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	current := pod.Annotations[kube.AnnotationTargetNetwork]
	want, err := c.podNetwork(pod, current)
	if err != nil {
		return err
	}
	value, changed, err := target.Next(current, want)
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

// podNetwork returns the Gateways the pod is a target of, tables unset.
// A Gateway whose annotations are invalid, or whose class is unknown,
// keeps the entry the pod has (a typo must not take the VIPs away).
func (c *Controller) podNetwork(pod *corev1.Pod, current string) ([]target.Gateway, error) {
	cur, _ := target.ParseDesired(current)
	byName := map[string]*target.Gateway{}
	states := map[string]*model.State{} // each Gateway translated once
	svcs, _ := c.inf.services.List(labels.Everything())
	slices.SortFunc(svcs, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	for _, svc := range svcs {
		gwName := svc.Labels[kube.LabelServiceProxyName]
		sel := podSelector(svc)
		if gwName == "" || sel == nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		gw, keep, err := c.serviceGateway(svc)
		switch {
		case err != nil:
			return nil, err
		case keep:
			if i := slices.IndexFunc(cur.Gateways, func(g target.Gateway) bool { return g.Name == gwName }); i >= 0 {
				byName[gwName] = &cur.Gateways[i] // left as it is
			}
			continue
		case gw == nil:
			continue
		}
		if cands, _ := endpoints.Candidates([]*corev1.Pod{pod}, *gw); len(cands) == 0 {
			continue // no address on the Gateway's networks, or finished
		}
		if _, done := states[gwName]; !done {
			states[gwName] = c.translateGateway(gwName, svcs)
		}
		entry := byName[gwName]
		if entry == nil {
			entry = &target.Gateway{Name: gwName, Subnets: gw.Subnets, NextHops: c.sllbrNextHops(*gw)}
			byName[gwName] = entry
		}
		entry.VIPs = append(entry.VIPs, serviceVIPs(states[gwName], svc.Name)...)
	}
	var out []target.Gateway
	for _, g := range byName {
		if len(g.VIPs) > 0 {
			out = append(out, *g)
		}
	}
	return out, nil
}

// translateGateway translates a Gateway's routes (nil when it is gone).
func (c *Controller) translateGateway(name string, svcs []*corev1.Service) *model.State {
	gw, err := c.inf.gateways.Get(name)
	if err != nil {
		return nil
	}
	state, _, _ := translate.Translate(translate.Snapshot{Gateway: gw, Routes: listCustom[*v1alpha1.L34Route](c.inf.routes), Services: svcs})
	return state
}

// serviceVIPs returns the destinations of the accepted routes to service.
func serviceVIPs(state *model.State, service string) []netip.Prefix {
	if state == nil {
		return nil
	}
	var out []netip.Prefix
	for _, r := range state.Routes {
		if r.Service == service {
			out = append(out, r.Destinations...)
		}
	}
	return out
}

// sllbrNextHops returns the addresses, on the Gateway's networks, of its
// ready SLLBR pods (labels app.kubernetes.io/component=sllbr and
// gateway.networking.k8s.io/gateway-name).
func (c *Controller) sllbrNextHops(gw model.Gateway) target.NextHops {
	pods, _ := c.inf.pods.List(labels.SelectorFromSet(sllbrSelector(gw.Name)))
	cands, _ := endpoints.Candidates(pods, gw)
	var n target.NextHops
	for _, cand := range cands {
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

func sllbrSelector(gateway string) labels.Set {
	return labels.Set{kube.LabelComponent: kube.ComponentSLLBR, kube.LabelGatewayName: gateway}
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
