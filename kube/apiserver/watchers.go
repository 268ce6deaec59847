package apiserver

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/informer"
	"github.com/sllbrd/sllbrd/kube/translate"
)

var groupVersion = v1alpha1.SchemeGroupVersion

// Resource names of the custom resources.
const (
	resourceL34Routes      = v1alpha1.ResourceL34Routes
	resourceGatewayRouters = v1alpha1.ResourceGatewayRouters
)

// newCRDClient returns a REST client for the v1alpha1 custom resources.
func newCRDClient(cfg *rest.Config) (rest.Interface, error) { return v1alpha1.NewRESTClient(cfg) }

// watchers are the informers of one Source, each on its link.
type watchers struct {
	gateways, routes, services, slices, routers *informer.Informer
	links                                       []*link
	// observed is when the first event not yet taken happened (unix ns; 0:
	// none), for the apply latency.
	observed atomic.Int64
}

// newWatchers builds the informers (kube/informer: they resume at once
// after an API server restart), each calling changed on every event.
func (s *Source) newWatchers(changed chan<- struct{}) *watchers {
	ns := s.namespace
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.gateway).String()
	}
	proxied := func(o *metav1.ListOptions) {
		o.LabelSelector = labels.SelectorFromSet(labels.Set{kube.LabelServiceProxyName: s.gateway}).String()
	}
	ofServices := func(o *metav1.ListOptions) { o.LabelSelector = kube.LabelServiceName }
	allObjects := func(*metav1.ListOptions) {}
	w := &watchers{}
	onError := func(err error) { s.log.Debug("API server list/watch failed", "err", err) }
	inform := func(kind string, c cache.Getter, resource string, modify func(*metav1.ListOptions), obj runtime.Object) *informer.Informer {
		l := newLink(kind, s.gate.Wrap(cache.NewFilteredListWatchFromClient(c, resource, ns, modify)), s.health)
		notify := func() {
			w.observed.CompareAndSwap(0, time.Now().UnixNano())
			signal(changed)
			signal(l.changed)
		}
		l.informer = informer.New(l, obj, informer.Options{
			Transform: trimForCache,
			Handler: cache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { notify() },
				UpdateFunc: func(any, any) { notify() },
				DeleteFunc: func(any) { notify() },
			},
			OnError: onError,
		})
		w.links = append(w.links, l)
		return l.informer
	}
	w.gateways = inform("Gateway", s.gateways.GatewayV1().RESTClient(), "gateways", byName, &gatewayv1.Gateway{})
	w.routes = inform("L34Route", s.crds, resourceL34Routes, allObjects, &v1alpha1.L34Route{})
	w.services = inform("Service", s.kube.CoreV1().RESTClient(), "services", proxied, &corev1.Service{})
	w.slices = inform("EndpointSlice", s.kube.DiscoveryV1().RESTClient(), "endpointslices", ofServices, &discoveryv1.EndpointSlice{})
	w.routers = inform("GatewayRouter", s.crds, resourceGatewayRouters, proxied, &v1alpha1.GatewayRouter{})
	return w
}

// hasSynced are the informers' HasSynced, for cache.WaitForCacheSync.
func (w *watchers) hasSynced() []cache.InformerSynced {
	var out []cache.InformerSynced
	for _, l := range w.links {
		out = append(out, l.informer.HasSynced)
	}
	return out
}

// kinds names the watched kinds.
func (w *watchers) kinds() []string {
	var kinds []string
	for _, l := range w.links {
		kinds = append(kinds, l.kind)
	}
	return kinds
}

// takeObserved returns when the first event since the last call happened
// (zero if none did).
func (w *watchers) takeObserved() time.Time {
	if ns := w.observed.Swap(0); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// start runs the informers until ctx is done.
func (w *watchers) start(ctx context.Context, wg *sync.WaitGroup) {
	for _, l := range w.links {
		wg.Go(func() { l.informer.RunWithContext(ctx) })
	}
}

// snapshot returns the translator's input from the informers' caches.
func (w *watchers) snapshot(namespace, gateway string) (translate.Snapshot, error) {
	obj, found, err := w.gateways.GetStore().GetByKey(namespace + "/" + gateway)
	if err != nil {
		return translate.Snapshot{}, fmt.Errorf("apiserver: Gateway %s/%s: %w", namespace, gateway, err)
	}
	if !found {
		return translate.Snapshot{}, fmt.Errorf("apiserver: %w %s/%s", translate.ErrNoGateway, namespace, gateway)
	}
	return translate.Snapshot{
		Gateway:        obj.(*gatewayv1.Gateway),
		Routes:         listOf[*v1alpha1.L34Route](w.routes),
		Services:       listOf[*corev1.Service](w.services),
		EndpointSlices: listOf[*discoveryv1.EndpointSlice](w.slices),
		Routers:        listOf[*v1alpha1.GatewayRouter](w.routers),
	}, nil
}

// listOf returns the objects in an informer's cache.
func listOf[T any](inf *informer.Informer) []T {
	items := inf.GetStore().List()
	out := make([]T, 0, len(items))
	for _, it := range items {
		if o, ok := it.(T); ok {
			out = append(out, o)
		}
	}
	return out
}
