package controller

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
	"github.com/sllbrd/sllbrd/kube/controller/status"
)

// podEvents is the reporter's family of the SLLBR pods' Events; each
// status.PodProblemKind is an Event reason prefixed with SLLBR
// (SLLBRPodsFailed, SLLBRImagePullFailing, ...).
const podEvents = "SLLBRPods"

// sllbrPods returns the pods and ReplicaSets of the Gateway's SLLBR
// Deployments, by the owner chain (sllbr.PodOf), whatever their labels.
func (c *Controller) sllbrPods(gw *gatewayv1.Gateway) ([]*corev1.Pod, []*appsv1.ReplicaSet) {
	ds := c.deployments(gw)
	if len(ds) == 0 {
		return nil, nil
	}
	rss, _ := c.inf.replicaSets.List(labels.Everything())
	rss = slices.DeleteFunc(rss, func(rs *appsv1.ReplicaSet) bool {
		return !slices.ContainsFunc(ds, func(d *appsv1.Deployment) bool { return sllbr.ReplicaSetOwnedBy(rs, d) })
	})
	all, _ := c.inf.pods.List(labels.Everything())
	pods := slices.DeleteFunc(all, func(p *corev1.Pod) bool {
		return !slices.ContainsFunc(ds, func(d *appsv1.Deployment) bool { return sllbr.PodOf(p, d, c.inf.replicaSets) })
	})
	return pods, rss
}

// podProblems returns why the Gateway's SLLBR pods do not start or become
// ready, and writes one Warning Event per problem when it first appears,
// related to the pod (or ReplicaSet) it was seen on.
func (c *Controller) podProblems(gw *gatewayv1.Gateway) []status.PodProblem {
	problems := status.PodProblems(c.sllbrPods(gw))
	report := make([]problem, 0, len(problems))
	for _, p := range problems {
		report = append(report, problem{key: p.Key, reason: "SLLBR" + string(p.Kind), note: "SLLBR " + p.Message, related: p.Source})
	}
	c.events.warnEach(gw, podEvents, report)
	return problems
}

// gatewayOf returns the Gateway that controls the Deployment d, "" when
// none does.
func gatewayOf(d *appsv1.Deployment) string {
	ref := metav1.GetControllerOfNoCopy(d)
	if ref == nil || ref.Kind != "Gateway" || ref.APIVersion != gatewayv1.GroupVersion.String() {
		return ""
	}
	return ref.Name
}

// gatewayOfReplicaSet follows a ReplicaSet's controller reference to a
// cached Deployment (UID) and that one's to its Gateway; "" when the chain
// breaks.
func (c *Controller) gatewayOfReplicaSet(rs *appsv1.ReplicaSet) string {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil || ref.Kind != "Deployment" {
		return ""
	}
	d, err := c.inf.deployments.Get(ref.Name)
	if err != nil || !sllbr.ReplicaSetOwnedBy(rs, d) {
		return ""
	}
	return gatewayOf(d)
}

// onReplicaSet: the Gateway of an SLLBR ReplicaSet (its pods, and whether
// it can create them).
func (c *Controller) onReplicaSet(old, obj any) []Key {
	rss := both[*appsv1.ReplicaSet](old, obj)
	if len(rss) == 2 && fmt.Sprint(rss[0].Status.Conditions) == fmt.Sprint(rss[1].Status.Conditions) {
		return nil
	}
	var keys []Key
	for _, rs := range rss {
		if gw := c.gatewayOfReplicaSet(rs); gw != "" {
			keys = append(keys, Key{KindGateway, gw})
		}
	}
	return keys
}

// onPodHealth: the Gateway of an SLLBR pod (by owner chain) that appeared,
// went away, or whose readiness or problems changed.
func (c *Controller) onPodHealth(old, obj any) []Key {
	pods := both[*corev1.Pod](old, obj)
	var keys []Key
	for _, p := range pods {
		if rs := sllbr.ReplicaSetOf(p, c.inf.replicaSets); rs != nil {
			if gw := c.gatewayOfReplicaSet(rs); gw != "" {
				keys = append(keys, Key{KindGateway, gw})
			}
		}
	}
	if len(keys) == 0 || (len(pods) == 2 && podHealth(pods[0]) == podHealth(pods[1])) {
		return nil
	}
	return keys
}

// podHealth sums up what the Gateway's status reads from a pod.
func podHealth(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprint(&b, p.DeletionTimestamp != nil, podReady(p))
	for _, pp := range status.PodProblems([]*corev1.Pod{p}, nil) {
		b.WriteString("\x00" + pp.Key + "\x00" + pp.Message)
	}
	return b.String()
}
