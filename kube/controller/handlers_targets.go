package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
)

// The event handlers of the target pods' network configuration
// (targets.go): a pod's key when the pod may be a target, and every target
// of a Gateway when its SLLBR pods (by owner chain, as sllbrNextHopPods
// decides) may have changed: one of them changed, or a ReplicaSet or
// Deployment of the chain came, went or changed its controller (a pod
// seen before its ReplicaSet reached the cache is found then).

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
		if rs := sllbr.ReplicaSetOf(p, c.inf.replicaSets); rs != nil {
			if gw := c.gatewayOfReplicaSet(rs); gw != "" {
				gateways[gw] = true
			}
		}
	}
	return append(keys, c.gatewaysPodKeys(gateways)...)
}

// onReplicaSetNetwork: the targets of the Gateway of a ReplicaSet that
// came, went or changed its controller.
func (c *Controller) onReplicaSetNetwork(old, obj any) []Key {
	return chainKeys(c, both[*appsv1.ReplicaSet](old, obj), c.gatewayOfReplicaSet)
}

// onDeploymentNetwork: the targets of the Gateway of a Deployment that
// came, went or changed its controller (its ReplicaSets may leave the
// cache after it, when the chain can no longer be followed).
func (c *Controller) onDeploymentNetwork(old, obj any) []Key {
	return chainKeys(c, both[*appsv1.Deployment](old, obj), gatewayOf)
}

// chainKeys are the targets of the Gateways that objs, an event's objects
// of the owner chain, lead to; none for an update that kept the
// controller reference.
func chainKeys[T metav1.Object](c *Controller, objs []T, gatewayOf func(T) string) []Key {
	if len(objs) == 2 && controllerUID(objs[0]) == controllerUID(objs[1]) {
		return nil
	}
	gateways := map[string]bool{}
	for _, o := range objs {
		if gw := gatewayOf(o); gw != "" {
			gateways[gw] = true
		}
	}
	return c.gatewaysPodKeys(gateways)
}

// controllerUID is the UID of o's controller reference, "" for none.
func controllerUID(o metav1.Object) types.UID {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return ref.UID
	}
	return ""
}

// gatewaysPodKeys are the pods of the Gateways' Services.
func (c *Controller) gatewaysPodKeys(gateways map[string]bool) []Key {
	var keys []Key
	for gw := range gateways {
		keys = append(keys, c.gatewayPodKeys(gw)...)
	}
	return keys
}

// networkRelevantChange reports whether a pod update can change a network
// configuration: what endpoints depend on, the annotation itself (an edit
// by hand is reverted), or its controller (an SLLBR pod released or
// adopted by its ReplicaSet).
func networkRelevantChange(a, b *corev1.Pod) bool {
	return endpointRelevantChange(a, b) || a.Annotations[kube.AnnotationTargetNetwork] != b.Annotations[kube.AnnotationTargetNetwork] ||
		controllerUID(a) != controllerUID(b)
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
