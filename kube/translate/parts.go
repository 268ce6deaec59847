package translate

import (
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/model"
)

// The functions below answer one question each with exactly the rules
// Translate applies, for callers that need a part of a translation (the
// controller: which networks and subnets a Gateway names, how many
// identifiers a Service has, whether its liveness annotation is valid,
// which Gateway a parentRef names).

// Gateway reads a Gateway's networks and network-subnets annotations; a
// Problem names every fault (a missing annotation, bad JSON, a bad entry),
// and the entries in fault are left out of the result.
func Gateway(g *gatewayv1.Gateway) (model.Gateway, []Problem) {
	var ps problems
	gw := translateGateway(g, &ps)
	return gw, ps
}

// MaxEndpoints returns a Service's identifier bound from its
// meridio-experiment/max-endpoints annotation (kube.DefaultMaxEndpoints when
// absent), or why the annotation is invalid.
func MaxEndpoints(svc *corev1.Service) (int, error) {
	return parseMaxEndpoints(svc.Annotations)
}

// Liveness returns a Service's endpoint liveness from its
// meridio-experiment/endpoint-liveness annotation (the kube.DefaultLiveness*
// values when absent; the zero model.Liveness for "off"), or why the
// annotation is invalid.
func Liveness(svc *corev1.Service) (model.Liveness, error) {
	return parseLiveness(svc.Annotations)
}

// IsParent reports whether p, a parentRef of a route in namespace
// routeNamespace, names the Gateway gw (group and kind defaulted as the
// Gateway API does).
func IsParent(p gatewayv1.ParentReference, routeNamespace string, gw model.Gateway) bool {
	return isGateway(p, routeNamespace, gw)
}
