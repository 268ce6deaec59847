package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/controller/status"
	"github.com/sllbrd/sllbrd/kube/translate"
)

// reconcileL34Route writes the route's status.parents entries for the owned
// Gateways it names (Accepted, ResolvedRefs, and TargetsConfigured: what
// of the route is left out of target pods' configurations), and removes
// the controller's other entries.
func (c *Controller) reconcileL34Route(ctx context.Context, name string) error {
	obj, err := getCustom(c.inf.routes, c.namespace, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	r := obj.(*v1alpha1.L34Route)
	svcs, _ := c.inf.services.List(labels.Everything())
	view := c.newTargetView()
	var want []gatewayv1.RouteParentStatus
	for _, p := range r.Spec.ParentRefs {
		gw := c.ownedParent(p, r.Namespace)
		if gw == nil {
			continue
		}
		_, problems, _ := translate.Translate(translate.Snapshot{Gateway: gw, Routes: []*v1alpha1.L34Route{r}, Services: svcs})
		mine := problemsOf(problems, translate.KindL34Route, r.Name)
		targets := status.RouteTargetsCondition(r, len(mine) == 0, c.routeLeftOut(view, r, gw.Name))
		want = append(want, gatewayv1.RouteParentStatus{
			ParentRef:  p,
			Conditions: append(status.RouteParentConditions(r, mine), targets),
		})
	}
	next := r.DeepCopy()
	next.Status.Parents = status.MergeRouteParents(r.Status.Parents, want, kube.ControllerName, metav1.Now())
	if equality.Semantic.DeepEqual(next.Status, r.Status) {
		return nil
	}
	return c.putStatus(ctx, v1alpha1.ResourceL34Routes, next)
}

// ownedParent returns the owned Gateway a parentRef of a route in namespace
// names, nil when it names none.
func (c *Controller) ownedParent(p gatewayv1.ParentReference, namespace string) *gatewayv1.Gateway {
	gw, err := c.inf.gateways.Get(string(p.Name))
	if err != nil {
		return nil
	}
	model, _ := translate.Gateway(gw)
	if own, _, err := c.owner(gw); err != nil || own != ours || !translate.IsParent(p, namespace, model) {
		return nil
	}
	return gw
}

// reconcileGatewayRouter writes the router's Accepted condition when an
// owned Gateway uses it, and removes it otherwise.
func (c *Controller) reconcileGatewayRouter(ctx context.Context, name string) error {
	obj, err := getCustom(c.inf.routers, c.namespace, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	r := obj.(*v1alpha1.GatewayRouter)
	next := r.DeepCopy()
	gw, err := c.inf.gateways.Get(r.Labels[kube.LabelServiceProxyName])
	own := notOurs
	if err == nil {
		own, _, _ = c.owner(gw)
	}
	if own == ours {
		_, problems, _ := translate.Translate(translate.Snapshot{Gateway: gw, Routers: []*v1alpha1.GatewayRouter{r}})
		conds := status.GatewayRouterConditions(r, problemsOf(problems, translate.KindGatewayRouter, r.Name))
		next.Status.Conditions = status.MergeConditions(r.Status.Conditions, conds, metav1.Now())
	} else {
		meta.RemoveStatusCondition(&next.Status.Conditions, status.TypeAccepted)
	}
	if equality.Semantic.DeepEqual(next.Status, r.Status) {
		return nil
	}
	return c.putStatus(ctx, v1alpha1.ResourceGatewayRouters, next)
}

// problemsOf keeps the problems about one object.
func problemsOf(ps []translate.Problem, kind, name string) []translate.Problem {
	var out []translate.Problem
	for _, p := range ps {
		if p.Kind == kind && p.Name == name {
			out = append(out, p)
		}
	}
	return out
}

// putStatus writes the status subresource of a custom resource.
func (c *Controller) putStatus(ctx context.Context, resource string, obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	err = c.crds.Put().Namespace(c.namespace).Resource(resource).Name(m.GetName()).SubResource("status").
		Body(obj).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("update status of %s %s: %w", resource, m.GetName(), err)
	}
	return nil
}

// enqueueAll queues every object the controller reconciles (on taking the
// lead: the events seen before were queued too, but this is the full set).
func (c *Controller) enqueueAll() {
	classes, _ := c.inf.classes.List(labels.Everything())
	for _, o := range classes {
		c.queue.Add(Key{KindGatewayClass, o.Name})
	}
	gws, _ := c.inf.gateways.List(labels.Everything())
	for _, o := range gws {
		c.queue.Add(Key{KindGateway, o.Name})
	}
	svcs, _ := c.inf.services.List(labels.Everything())
	for _, o := range svcs {
		c.queue.Add(Key{KindService, o.Name})
	}
	for _, o := range listCustom[*v1alpha1.L34Route](c.inf.routes) {
		c.queue.Add(Key{KindL34Route, o.Name})
	}
	for _, o := range listCustom[*v1alpha1.GatewayRouter](c.inf.routers) {
		c.queue.Add(Key{KindGatewayRouter, o.Name})
	}
	c.enqueuePods()
	// Slices of Services that are gone: their Service key deletes them.
	slices, _ := c.inf.slices.List(labels.Everything())
	for _, s := range slices {
		if svc := s.Labels[kube.LabelServiceName]; svc != "" {
			c.queue.Add(Key{KindService, svc})
		}
	}
}
