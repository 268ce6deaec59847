package translate

import (
	"cmp"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/model"
)

// Snapshot is the set of objects one translation reads. The slices may hold
// objects of other namespaces and other Gateways; Translate filters them.
// Pointers are what listers return; Translate never modifies the objects.
type Snapshot struct {
	Gateway        *gatewayv1.Gateway
	Routes         []*v1alpha1.L34Route
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	Routers        []*v1alpha1.GatewayRouter
	// Secrets hold the GatewayRouters' BGP passwords; only those that a
	// GatewayRouter references are read.
	Secrets []*corev1.Secret
}

// ErrNoGateway says the configuration has no Gateway of the name asked
// for: Translate returns it when the Snapshot has none, and the sources
// (kube/manifest, kube/apiserver) wrap it when the Gateway is not defined
// or was deleted, so that a consumer can tell that case from an unreadable
// configuration (sllbrd then withdraws the Gateway's VIPs).
var ErrNoGateway = errors.New("no Gateway")

// Translate builds the desired state of the Gateway in s and lists the
// problems found on the way. The only error is ErrNoGateway; invalid objects
// are Problems, not errors. Options add checks that depend on how the
// dataplane runs (WithCopyRange).
func Translate(s Snapshot, opts ...Option) (*model.State, []Problem, error) {
	if s.Gateway == nil {
		return nil, nil, ErrNoGateway
	}
	var ps problems
	gw := translateGateway(s.Gateway, &ps)
	services := translateServices(gw, s.Services, s.EndpointSlices, &ps)
	state := &model.State{
		Gateway:  gw,
		Routes:   translateRoutes(gw, s.Routes, services, newOptions(opts), &ps),
		Services: services.accepted,
		Routers:  translateRouters(gw, s.Routers, newSecretIndex(gw, s.Secrets), &ps),
	}
	return state, ps, nil
}

// inScope returns the objects of the Gateway's namespace ordered by name.
func inScope[T metav1.Object](gw model.Gateway, objs []T) []T {
	var out []T
	for _, o := range objs {
		if o.GetNamespace() == gw.Namespace {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b T) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return out
}

// qualified returns "namespace/name" of an object.
func qualified(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }
