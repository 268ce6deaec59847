package apiserver

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	corev1informers "k8s.io/client-go/informers/core/v1"
	discoveryv1informers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1informers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/translate"
)

var groupVersion = v1alpha1.SchemeGroupVersion

// Resource names of the custom resources.
const (
	resourceL34Routes      = "l34routes"
	resourceGatewayRouters = "gatewayrouters"
)

// newCRDClient returns a REST client for the v1alpha1 custom resources; no
// typed clientset is generated for them.
func newCRDClient(cfg *rest.Config) (rest.Interface, error) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &groupVersion
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}

// watchers are the informers of one Source.
type watchers struct {
	gateways, routes, services, slices, routers cache.SharedIndexInformer
	hasSynced                                   []cache.InformerSynced
}

// newWatchers builds the informers, each calling changed on every event and
// watchFailed when a list or watch fails.
func (s *Source) newWatchers(changed chan<- struct{}, watchFailed func(error)) (*watchers, error) {
	ns := s.namespace
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.gateway).String()
	}
	proxied := func(o *metav1.ListOptions) {
		o.LabelSelector = labels.SelectorFromSet(labels.Set{kube.LabelServiceProxyName: s.gateway}).String()
	}
	ofServices := func(o *metav1.ListOptions) { o.LabelSelector = kube.LabelServiceName }
	allObjects := func(*metav1.ListOptions) {}
	w := &watchers{
		gateways: gatewayv1informers.NewFilteredGatewayInformer(s.gateways, ns, 0, cache.Indexers{}, byName),
		routes: cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(
			s.crds, resourceL34Routes, ns, allObjects), &v1alpha1.L34Route{}, 0, cache.Indexers{}),
		services: corev1informers.NewFilteredServiceInformer(s.kube, ns, 0, cache.Indexers{}, proxied),
		slices:   discoveryv1informers.NewFilteredEndpointSliceInformer(s.kube, ns, 0, cache.Indexers{}, ofServices),
		routers: cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(
			s.crds, resourceGatewayRouters, ns, proxied), &v1alpha1.GatewayRouter{}, 0, cache.Indexers{}),
	}
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal(changed) },
		UpdateFunc: func(any, any) { signal(changed) },
		DeleteFunc: func(any) { signal(changed) },
	}
	onError := func(_ *cache.Reflector, err error) { watchFailed(err) }
	for _, inf := range w.all() {
		if err := inf.SetTransform(trimForCache); err != nil { // routerfeat: informer trimming
			return nil, fmt.Errorf("apiserver: transform: %w", err)
		}
		if err := inf.SetWatchErrorHandler(onError); err != nil {
			return nil, fmt.Errorf("apiserver: watch error handler: %w", err)
		}
		reg, err := inf.AddEventHandler(notify)
		if err != nil {
			return nil, fmt.Errorf("apiserver: event handler: %w", err)
		}
		w.hasSynced = append(w.hasSynced, inf.HasSynced, reg.HasSynced)
	}
	return w, nil
}

func (w *watchers) all() []cache.SharedIndexInformer {
	return []cache.SharedIndexInformer{w.gateways, w.routes, w.services, w.slices, w.routers}
}

// start runs the informers until ctx is done.
func (w *watchers) start(ctx context.Context, wg *sync.WaitGroup) {
	for _, inf := range w.all() {
		wg.Go(func() { inf.RunWithContext(ctx) })
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
func listOf[T any](inf cache.SharedIndexInformer) []T {
	items := inf.GetStore().List()
	out := make([]T, 0, len(items))
	for _, it := range items {
		if o, ok := it.(T); ok {
			out = append(out, o)
		}
	}
	return out
}
