package controller

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/controller/endpoints"
)

// The functions of this file map an informer event (old and new object;
// old nil on add, new nil on delete) to the keys it affects. They read the
// informers' caches only; keys are deduplicated by the queue.

var errNotFound = apierrors.NewNotFound(v1alpha1.Resource("object"), "")

// enqueuer adapts a mapping function to an event handler.
func (c *Controller) enqueuer(keys func(old, obj any) []Key) cache.ResourceEventHandler {
	add := func(ks []Key) {
		for _, k := range ks {
			c.queue.Add(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { add(keys(nil, obj)) },
		UpdateFunc: func(old, obj any) { add(keys(old, obj)) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.forget(obj)
			add(keys(obj, nil))
		},
	}
}

// forget drops what the controller remembers about a deleted object.
func (c *Controller) forget(obj any) {
	if m, err := meta.Accessor(obj); err == nil {
		c.events.forget(m.GetUID())
	}
	if svc, ok := obj.(*corev1.Service); ok {
		c.forgetService(svc.Name)
	}
}

// both returns the non-nil objects of an event, as T.
func both[T any](old, obj any) []T {
	var out []T
	for _, o := range []any{old, obj} {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

func (c *Controller) onGatewayClass(old, obj any) []Key {
	var keys []Key
	for _, class := range both[*gatewayv1.GatewayClass](old, obj) {
		keys = append(keys, Key{KindGatewayClass, class.Name})
		gws, _ := c.inf.gateways.List(labels.Everything())
		for _, gw := range gws {
			if string(gw.Spec.GatewayClassName) == class.Name {
				keys = append(keys, c.gatewayKeys(gw.Name)...)
			}
		}
	}
	return keys
}

func (c *Controller) onGateway(old, obj any) []Key {
	var keys []Key
	for _, gw := range both[*gatewayv1.Gateway](old, obj) {
		keys = append(keys, c.gatewayKeys(gw.Name)...)
	}
	return keys
}

// gatewayKeys are a Gateway and everything reconciled from it: its
// Services, L34Routes and GatewayRouters.
func (c *Controller) gatewayKeys(gateway string) []Key {
	keys := []Key{{KindGateway, gateway}}
	proxied := labels.SelectorFromSet(labels.Set{kube.LabelServiceProxyName: gateway})
	svcs, _ := c.inf.services.List(proxied)
	for _, s := range svcs {
		keys = append(keys, Key{KindService, s.Name})
		keys = append(keys, c.selectedPodKeys(s)...)
	}
	for _, r := range listCustom[*v1alpha1.L34Route](c.inf.routes) {
		for _, p := range r.Spec.ParentRefs {
			if string(p.Name) == gateway {
				keys = append(keys, Key{KindL34Route, r.Name})
			}
		}
	}
	for _, r := range listCustom[*v1alpha1.GatewayRouter](c.inf.routers) {
		if r.Labels[kube.LabelServiceProxyName] == gateway {
			keys = append(keys, Key{KindGatewayRouter, r.Name})
		}
	}
	return keys
}

// onService: the Service's slices, and the routes to it with their
// Gateways (whether a route is accepted depends on its Service).
func (c *Controller) onService(old, obj any) []Key {
	var keys []Key
	for _, svc := range both[*corev1.Service](old, obj) {
		keys = append(keys, Key{KindService, svc.Name})
		keys = append(keys, c.selectedPodKeys(svc)...)
		for _, r := range listCustom[*v1alpha1.L34Route](c.inf.routes) {
			for _, b := range r.Spec.BackendRefs {
				if string(b.Name) == svc.Name {
					keys = append(keys, routeKeys(r)...)
				}
			}
		}
	}
	return keys
}

func (c *Controller) onPod(old, obj any) []Key {
	return slices.Concat(c.onPodEndpoints(old, obj), c.onPodNetwork(old, obj), c.onPodHealth(old, obj))
}

// onPodEndpoints: the Services whose endpoints the pod is or was.
func (c *Controller) onPodEndpoints(old, obj any) []Key {
	pods := both[*corev1.Pod](old, obj)
	if len(pods) == 2 && !endpointRelevantChange(pods[0], pods[1]) {
		return nil
	}
	svcs, _ := c.inf.services.List(labels.Everything())
	var keys []Key
	for _, svc := range svcs {
		sel := podSelector(svc)
		if sel == nil || svc.Labels[kube.LabelServiceProxyName] == "" {
			continue
		}
		for _, p := range pods {
			if sel.Matches(labels.Set(p.Labels)) {
				keys = append(keys, Key{KindService, svc.Name})
				break
			}
		}
	}
	return keys
}

// endpointRelevantChange reports whether a pod update can change its
// endpoint: labels, network-status, phase, readiness, deletion or node,
// whether its network configuration is applied (endpoints.Unapplied: its
// agent annotation, and the ready bit of the node daemon's status, not
// every rewrite of it), and what ends a readiness hold at once: a container
// that stops or restarts, the containers' readiness.
func endpointRelevantChange(a, b *corev1.Pod) bool {
	whyA, faultA := endpoints.Unapplied(a)
	whyB, faultB := endpoints.Unapplied(b)
	return !maps.Equal(a.Labels, b.Labels) || whyA != whyB || faultA != faultB ||
		a.Annotations[kube.AnnotationNetworkStatus] != b.Annotations[kube.AnnotationNetworkStatus] ||
		a.Status.Phase != b.Status.Phase || podReady(a) != podReady(b) ||
		(a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) || a.Spec.NodeName != b.Spec.NodeName ||
		podCondition(a, corev1.ContainersReady) != podCondition(b, corev1.ContainersReady) ||
		!slices.Equal(containerStarts(a), containerStarts(b))
}

func podReady(p *corev1.Pod) corev1.ConditionStatus { return podCondition(p, corev1.PodReady) }

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// containerStarts lists, per container status, its name and when it started
// running ("" while it does not run).
func containerStarts(p *corev1.Pod) []string {
	var out []string
	for _, s := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		started := ""
		if r := s.State.Running; r != nil {
			started = r.StartedAt.UTC().Format(time.RFC3339Nano)
		}
		out = append(out, s.Name+"@"+started)
	}
	return out
}

func (c *Controller) onEndpointSlice(old, obj any) []Key {
	var keys []Key
	for _, s := range both[*discoveryv1.EndpointSlice](old, obj) {
		if svc := s.Labels[kube.LabelServiceName]; svc != "" {
			keys = append(keys, Key{KindService, svc})
		}
	}
	return keys
}

func (c *Controller) onDeployment(old, obj any) []Key {
	var keys []Key
	for _, o := range []any{old, obj} {
		if m, err := meta.Accessor(o); err == nil && o != nil {
			if gw := m.GetLabels()[kube.LabelGatewayName]; gw != "" {
				keys = append(keys, Key{KindGateway, gw})
			}
		}
	}
	return keys
}

// onConfigMap: the template concerns every Gateway, parameters those that
// name the ConfigMap.
func (c *Controller) onConfigMap(old, obj any) []Key {
	var keys []Key
	gws, _ := c.inf.gateways.List(labels.Everything())
	for _, cm := range both[*corev1.ConfigMap](old, obj) {
		for _, gw := range gws {
			if cm.Name == c.templateConfigMap || parametersName(gw) == cm.Name {
				keys = append(keys, Key{KindGateway, gw.Name})
			}
		}
	}
	return keys
}

func (c *Controller) onL34Route(old, obj any) []Key {
	var keys []Key
	for _, r := range both[*v1alpha1.L34Route](old, obj) {
		keys = append(keys, routeKeys(r)...)
		for _, b := range r.Spec.BackendRefs {
			if svc, err := c.inf.services.Get(string(b.Name)); err == nil {
				keys = append(keys, c.selectedPodKeys(svc)...)
			}
		}
	}
	return keys
}

// routeKeys are a route and the Gateways it names (their addresses are the
// routes' VIPs).
func routeKeys(r *v1alpha1.L34Route) []Key {
	keys := []Key{{KindL34Route, r.Name}}
	for _, p := range r.Spec.ParentRefs {
		keys = append(keys, Key{KindGateway, string(p.Name)})
	}
	return keys
}

func (c *Controller) onGatewayRouter(old, obj any) []Key {
	var keys []Key
	for _, r := range both[*v1alpha1.GatewayRouter](old, obj) {
		keys = append(keys, Key{KindGatewayRouter, r.Name})
	}
	return keys
}

// parametersName is the ConfigMap a Gateway's parametersRef names, or "".
func parametersName(gw *gatewayv1.Gateway) string {
	if inf := gw.Spec.Infrastructure; inf != nil && inf.ParametersRef != nil && inf.ParametersRef.Kind == "ConfigMap" {
		return inf.ParametersRef.Name
	}
	return ""
}
