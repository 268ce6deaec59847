package status

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/translate"
)

// GatewayClassConditions returns the Accepted condition of a GatewayClass
// of sllbrd's controller.
func GatewayClassConditions(c *gatewayv1.GatewayClass) []metav1.Condition {
	if c.Spec.ParametersRef != nil {
		return []metav1.Condition{condition(TypeAccepted, false, string(gatewayv1.GatewayClassReasonInvalidParameters),
			"spec.parametersRef is not supported: give each Gateway its parameters in spec.infrastructure.parametersRef", c.Generation)}
	}
	return []metav1.Condition{condition(TypeAccepted, true, string(gatewayv1.GatewayClassReasonAccepted),
		"Handled by sllbrd's controller", c.Generation)}
}

// GatewayRouterConditions returns the Accepted condition of a GatewayRouter
// of an owned Gateway, from the translator's problems about it.
func GatewayRouterConditions(r *v1alpha1.GatewayRouter, problems []translate.Problem) []metav1.Condition {
	if len(problems) > 0 {
		return []metav1.Condition{condition(TypeAccepted, false, ReasonInvalid, Join(problems), r.Generation)}
	}
	return []metav1.Condition{condition(TypeAccepted, true, "Accepted", "Used by the SLLBR pods of the Gateway", r.Generation)}
}

// RouteParentConditions returns the Accepted and ResolvedRefs conditions of
// an L34Route towards one owned Gateway, from the translator's problems
// about the route: problems of spec.backendRefs make ResolvedRefs false,
// the others Accepted.
func RouteParentConditions(r *v1alpha1.L34Route, problems []translate.Problem) []metav1.Condition {
	var refs, others []translate.Problem
	for _, p := range problems {
		if strings.HasPrefix(p.Field, "spec.backendRefs") {
			refs = append(refs, p)
		} else {
			others = append(others, p)
		}
	}
	accepted := condition(TypeAccepted, true, string(gatewayv1.RouteReasonAccepted), "Accepted by the Gateway", r.Generation)
	if len(others) > 0 {
		accepted = condition(TypeAccepted, false, string(gatewayv1.RouteReasonUnsupportedValue), Join(others), r.Generation)
	}
	resolved := condition(TypeResolvedRefs, true, string(gatewayv1.RouteReasonResolvedRefs), "The backend Service is usable", r.Generation)
	if len(refs) > 0 {
		resolved = condition(TypeResolvedRefs, false, string(backendReason(r)), Join(refs), r.Generation)
	}
	return []metav1.Condition{accepted, resolved}
}

// backendReason names what is wrong with the route's backendRefs.
func backendReason(r *v1alpha1.L34Route) gatewayv1.RouteConditionReason {
	for _, b := range r.Spec.BackendRefs {
		switch {
		case b.Group != nil && *b.Group != "", b.Kind != nil && *b.Kind != "Service":
			return gatewayv1.RouteReasonInvalidKind
		case b.Namespace != nil && string(*b.Namespace) != r.Namespace:
			return gatewayv1.RouteReasonRefNotPermitted
		}
	}
	return gatewayv1.RouteReasonBackendNotFound
}

// MergeRouteParents returns current with the entries of controller set to
// want: another controller's entries are kept as they are, this
// controller's entries for parents not in want are removed, and conditions
// are merged into an existing entry for the same parentRef.
func MergeRouteParents(current, want []gatewayv1.RouteParentStatus, controller gatewayv1.GatewayController, now metav1.Time) []gatewayv1.RouteParentStatus {
	var out []gatewayv1.RouteParentStatus
	for _, p := range current {
		if p.ControllerName != controller {
			out = append(out, *p.DeepCopy())
		}
	}
	for _, w := range want {
		var conds []metav1.Condition
		for _, p := range current {
			if p.ControllerName == controller && sameParent(p.ParentRef, w.ParentRef) {
				conds = p.Conditions
			}
		}
		out = append(out, gatewayv1.RouteParentStatus{
			ParentRef: *w.ParentRef.DeepCopy(), ControllerName: controller,
			Conditions: MergeConditions(conds, w.Conditions, now),
		})
	}
	return out
}

func sameParent(a, b gatewayv1.ParentReference) bool {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return a.Name == b.Name && str((*string)(a.Namespace)) == str((*string)(b.Namespace)) &&
		str((*string)(a.Group)) == str((*string)(b.Group)) && str((*string)(a.Kind)) == str((*string)(b.Kind)) &&
		str((*string)(a.SectionName)) == str((*string)(b.SectionName)) && ptrEq(a.Port, b.Port)
}

func ptrEq[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
