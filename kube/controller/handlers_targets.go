package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sllbrd/sllbrd/kube"
)

// The event handlers of the target pods' network configuration
// (targets.go): a pod's key when the pod may be a target, and every target
// of a Gateway when one of its SLLBR pods changes.

// onPodNetwork maps a pod event to the pods whose network configuration
// it can change: the pod itself, and when it is an SLLBR pod, every pod of
// its Gateway's Services.
func (c *Controller) onPodNetwork(old, obj any) []Key {
	pods := both[*corev1.Pod](old, obj)
	if len(pods) == 2 && !networkRelevantChange(pods[0], pods[1]) {
		return nil
	}
	var keys []Key
	gateways := map[string]bool{}
	for _, p := range pods {
		if _, annotated := p.Annotations[kube.AnnotationTargetNetwork]; annotated || c.selected(p) {
			keys = append(keys, Key{KindPod, p.Name})
		}
		if p.Labels[kube.LabelComponent] == kube.ComponentSLLBR && p.Labels[kube.LabelGatewayName] != "" {
			gateways[p.Labels[kube.LabelGatewayName]] = true
		}
	}
	for gw := range gateways {
		keys = append(keys, c.gatewayPodKeys(gw)...)
	}
	return keys
}

// networkRelevantChange reports whether a pod update can change a network
// configuration: what endpoints depend on, or the annotation itself (an
// edit by hand is reverted).
func networkRelevantChange(a, b *corev1.Pod) bool {
	return endpointRelevantChange(a, b) || a.Annotations[kube.AnnotationTargetNetwork] != b.Annotations[kube.AnnotationTargetNetwork]
}

// selected reports whether a Service of some Gateway selects the pod.
func (c *Controller) selected(pod *corev1.Pod) bool {
	svcs, _ := c.inf.services.List(labels.Everything())
	for _, svc := range svcs {
		if sel := podSelector(svc); sel != nil && svc.Labels[kube.LabelServiceProxyName] != "" && sel.Matches(labels.Set(pod.Labels)) {
			return true
		}
	}
	return false
}

// selectedPodKeys are the pods a Service of a Gateway selects (called with
// a Service's old and new version, it covers the pods it stops selecting).
func (c *Controller) selectedPodKeys(svc *corev1.Service) []Key {
	sel := podSelector(svc)
	if sel == nil || svc.Labels[kube.LabelServiceProxyName] == "" {
		return nil
	}
	pods, _ := c.inf.pods.List(sel)
	keys := make([]Key, 0, len(pods))
	for _, p := range pods {
		keys = append(keys, Key{KindPod, p.Name})
	}
	return keys
}

// gatewayPodKeys are the pods of a Gateway's Services.
func (c *Controller) gatewayPodKeys(gateway string) []Key {
	svcs, _ := c.inf.services.List(labels.SelectorFromSet(labels.Set{kube.LabelServiceProxyName: gateway}))
	var keys []Key
	for _, s := range svcs {
		keys = append(keys, c.selectedPodKeys(s)...)
	}
	return keys
}

// enqueuePods queues every pod that is or may become a target.
func (c *Controller) enqueuePods() {
	pods, _ := c.inf.pods.List(labels.Everything())
	for _, p := range pods {
		if _, annotated := p.Annotations[kube.AnnotationTargetNetwork]; annotated || c.selected(p) {
			c.queue.Add(Key{KindPod, p.Name})
		}
	}
}
