package controller

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/apigate"
	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
	"github.com/sllbrd/sllbrd/kube/informer"
)

// informers are the controller's watches and the listers over their caches.
// Everything is in the controller's namespace except GatewayClasses.
type informers struct {
	all []*informer.Informer

	classes     gatewaylisters.GatewayClassLister
	gateways    gatewaylisters.GatewayNamespaceLister
	services    corelisters.ServiceNamespaceLister
	pods        corelisters.PodNamespaceLister
	slices      discoverylisters.EndpointSliceNamespaceLister
	deployments appslisters.DeploymentNamespaceLister
	replicaSets appslisters.ReplicaSetNamespaceLister
	configMaps  corelisters.ConfigMapNamespaceLister
	routes      cache.Indexer // *v1alpha1.L34Route
	routers     cache.Indexer // *v1alpha1.GatewayRouter
}

// newInformers builds the informers, each with its event handler of
// handlers.go.
func (c *Controller) newInformers() *informers {
	ns := c.namespace
	none := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	all := func(*metav1.ListOptions) {}
	labelled := func(set labels.Set) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) { o.LabelSelector = labels.SelectorFromSet(set).String() }
	}
	// Every informer lists and watches through one gate (kube/apigate): an
	// API server outage costs one failure, and the informers (kube/informer)
	// list again at once when it is over.
	gate := apigate.New(apigate.Readyz(c.kube.Discovery()), apigate.DefaultPeriod)
	onError := func(err error) { c.log.Debug("API server list/watch failed", "err", err) }
	inf := &informers{}
	inform := func(client cache.Getter, resource, namespace string, modify func(*metav1.ListOptions), obj runtime.Object, keys func(old, obj any) []Key) *informer.Informer {
		i := informer.New(gate.Wrap(cache.NewFilteredListWatchFromClient(client, resource, namespace, modify)), obj,
			informer.Options{Indexers: none, Handler: c.enqueuer(keys), OnError: onError})
		inf.all = append(inf.all, i)
		return i
	}
	core, apps, gw := c.kube.CoreV1().RESTClient(), c.kube.AppsV1().RESTClient(), c.gateways.GatewayV1().RESTClient()
	classes := inform(gw, "gatewayclasses", metav1.NamespaceAll, all, &gatewayv1.GatewayClass{}, c.onGatewayClass)
	gateways := inform(gw, "gateways", ns, all, &gatewayv1.Gateway{}, c.onGateway)
	services := inform(core, "services", ns, all, &corev1.Service{}, c.onService)
	pods := inform(core, "pods", ns, all, &corev1.Pod{}, c.onPod)
	slices := inform(c.kube.DiscoveryV1().RESTClient(), "endpointslices", ns,
		labelled(labels.Set{kube.LabelEndpointSliceManagedBy: kube.EndpointSliceManager}), &discoveryv1.EndpointSlice{}, c.onEndpointSlice)
	ours := labelled(labels.Set{"app.kubernetes.io/managed-by": sllbr.ManagedBy}) // narrows; owners decide
	deployments := inform(apps, "deployments", ns, ours, &appsv1.Deployment{}, concatKeys(c.onDeployment, c.onDeploymentNetwork))
	replicaSets := inform(apps, "replicasets", ns, ours, &appsv1.ReplicaSet{}, concatKeys(c.onReplicaSet, c.onReplicaSetNetwork))
	configMaps := inform(core, "configmaps", ns, all, &corev1.ConfigMap{}, c.onConfigMap)
	routes := inform(c.crds, v1alpha1.ResourceL34Routes, ns, all, &v1alpha1.L34Route{}, c.onL34Route)
	routers := inform(c.crds, v1alpha1.ResourceGatewayRouters, ns, all, &v1alpha1.GatewayRouter{}, c.onGatewayRouter)
	inf.classes = gatewaylisters.NewGatewayClassLister(classes.GetIndexer())
	inf.gateways = gatewaylisters.NewGatewayLister(gateways.GetIndexer()).Gateways(ns)
	inf.services = corelisters.NewServiceLister(services.GetIndexer()).Services(ns)
	inf.pods = corelisters.NewPodLister(pods.GetIndexer()).Pods(ns)
	inf.slices = discoverylisters.NewEndpointSliceLister(slices.GetIndexer()).EndpointSlices(ns)
	inf.deployments = appslisters.NewDeploymentLister(deployments.GetIndexer()).Deployments(ns)
	inf.replicaSets = appslisters.NewReplicaSetLister(replicaSets.GetIndexer()).ReplicaSets(ns)
	inf.configMaps = corelisters.NewConfigMapLister(configMaps.GetIndexer()).ConfigMaps(ns)
	inf.routes = routes.GetIndexer()
	inf.routers = routers.GetIndexer()
	return inf
}

// concatKeys maps an event with every one of fs (an informer has one
// handler).
func concatKeys(fs ...func(old, obj any) []Key) func(old, obj any) []Key {
	return func(old, obj any) []Key {
		var keys []Key
		for _, f := range fs {
			keys = append(keys, f(old, obj)...)
		}
		return keys
	}
}

// hasSynced are the informers' HasSynced, for cache.WaitForCacheSync.
func (inf *informers) hasSynced() []cache.InformerSynced {
	var out []cache.InformerSynced
	for _, i := range inf.all {
		out = append(out, i.HasSynced)
	}
	return out
}

// start runs the informers until ctx ends.
func (inf *informers) start(ctx context.Context, wg *sync.WaitGroup) {
	for _, i := range inf.all {
		wg.Go(func() { i.RunWithContext(ctx) })
	}
}

// getCustom returns a custom resource from an informer's indexer.
func getCustom(idx cache.Indexer, namespace, name string) (runtime.Object, error) {
	obj, ok, err := idx.GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotFound
	}
	return obj.(runtime.Object), nil
}

// listCustom returns the custom resources of an informer's cache.
func listCustom[T runtime.Object](idx cache.Indexer) []T {
	items := idx.List()
	out := make([]T, 0, len(items))
	for _, it := range items {
		if o, ok := it.(T); ok {
			out = append(out, o)
		}
	}
	return out
}
