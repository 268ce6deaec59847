package status

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// MaxAddresses is the most addresses a Gateway's status may list.
const MaxAddresses = 16

// Problem is a fault with its condition reason.
type Problem struct {
	Reason, Message string
}

// Replicas is the SLLBR Deployment's state.
type Replicas struct {
	Desired, Ready int32
}

// Gateway is what the Gateway's status is computed from.
type Gateway struct {
	Generation int64
	// NotAccepted, when set, is why the Gateway is not accepted (unknown
	// class, invalid annotations, invalid parameters).
	NotAccepted *Problem
	// Deployment is the SLLBR Deployment's replicas; nil when there is none.
	Deployment *Replicas
	// DeploymentProblem is why the Deployment is missing or not up to date
	// (an invalid template, a name conflict, a failed write); nil when none.
	DeploymentProblem *Problem
	// VIPs are the destinations of the accepted L34Routes, in any order,
	// possibly repeated.
	VIPs []netip.Addr
	// Pods are why SLLBR pods do not start or become ready (PodProblems).
	Pods []PodProblem
	// RoutesLeftOut are the Gateway's L34Routes that are left out of some
	// target pods' configuration (their TargetsConfigured condition).
	RoutesLeftOut []RouteLeftOut
}

// RouteLeftOut is an L34Route whose TargetsConfigured condition towards
// the Gateway is False for a reason other than NotAccepted.
type RouteLeftOut struct {
	Route           string // namespace/name
	Reason, Message string
}

// GatewayStatus returns the Gateway's addresses and its Accepted,
// Programmed and TargetsConfigured conditions (transition times left for
// MergeConditions).
func GatewayStatus(g Gateway) ([]gatewayv1.GatewayStatusAddress, []metav1.Condition) {
	accepted := condition(TypeAccepted, true, string(gatewayv1.GatewayReasonAccepted), "Accepted by sllbrd", g.Generation)
	if p := g.NotAccepted; p != nil {
		accepted = condition(TypeAccepted, false, p.Reason, p.Message, g.Generation)
	}
	vips := slices.Clone(g.VIPs)
	slices.SortFunc(vips, netip.Addr.Compare)
	vips = slices.Compact(vips)
	var omitted string
	if len(vips) > MaxAddresses {
		omitted = fmt.Sprintf("; status.addresses lists %d of %d VIPs (the Gateway API allows %d)", MaxAddresses, len(vips), MaxAddresses)
		vips = vips[:MaxAddresses]
	}
	addrs := make([]gatewayv1.GatewayStatusAddress, 0, len(vips))
	for _, a := range vips {
		addrs = append(addrs, gatewayv1.GatewayStatusAddress{Type: ptr.To(gatewayv1.IPAddressType), Value: a.String()})
	}
	return addrs, []metav1.Condition{accepted, programmed(g, omitted), gatewayTargets(g)}
}

// maxRouteMessage bounds what the Gateway's condition quotes of each
// route's.
const maxRouteMessage = 500

// gatewayTargets is the Gateway's TargetsConfigured condition: True when
// every target pod holds the VIPs of every accepted L34Route of the Gateway;
// False, with the reason of the first route (conflicts first), naming the
// routes left out and why, when some pods do not (each route's own
// condition names the pods).
func gatewayTargets(g Gateway) metav1.Condition {
	if len(g.RoutesLeftOut) == 0 {
		return condition(TypeTargetsConfigured, true, TypeTargetsConfigured,
			"Every target pod's network configuration holds the VIPs of the Gateway's accepted L34Routes", g.Generation)
	}
	routes := slices.Clone(g.RoutesLeftOut)
	slices.SortFunc(routes, func(a, b RouteLeftOut) int {
		return cmp.Or(cmp.Compare(reasonRank(a.Reason), reasonRank(b.Reason)), cmp.Compare(a.Route, b.Route))
	})
	parts := make([]string, len(routes))
	for i, r := range routes {
		parts[i] = "L34Route " + r.Route + ": " + clipTo(r.Message, maxRouteMessage)
	}
	return condition(TypeTargetsConfigured, false, routes[0].Reason,
		"Left out of target pods' configuration (each L34Route's TargetsConfigured condition): "+firstOf(parts, "L34Routes"), g.Generation)
}

func programmed(g Gateway, omitted string) metav1.Condition {
	note := podsNote(g.Pods)
	if p := g.DeploymentProblem; p != nil {
		note += "; the SLLBR Deployment is not up to date: " + p.Message
	}
	switch d := g.Deployment; {
	case d == nil && g.DeploymentProblem != nil:
		return condition(TypeProgrammed, false, g.DeploymentProblem.Reason, "No SLLBR Deployment: "+g.DeploymentProblem.Message, g.Generation)
	case d == nil:
		return condition(TypeProgrammed, false, string(gatewayv1.GatewayReasonPending), "The SLLBR Deployment does not exist yet", g.Generation)
	case d.Ready < 1:
		return condition(TypeProgrammed, false, ReasonNoReadyReplicas,
			fmt.Sprintf("No SLLBR replica is ready (0 of %d)%s%s", d.Desired, note, omitted), g.Generation)
	}
	return condition(TypeProgrammed, true, string(gatewayv1.GatewayReasonProgrammed),
		fmt.Sprintf("%d of %d SLLBR replicas ready%s%s", g.Deployment.Ready, g.Deployment.Desired, note, omitted), g.Generation)
}

// podsNote lists the first pod problems for the Programmed message.
func podsNote(ps []PodProblem) string {
	var b strings.Builder
	for i, p := range ps {
		if i == shownPodProblems {
			fmt.Fprintf(&b, "; and %d more pod problems (Events on the Gateway)", len(ps)-i)
			break
		}
		b.WriteString("; " + p.Message)
	}
	return b.String()
}

// Written returns the parts of a Gateway's status that manager wrote and
// owns still, read from the Gateway's managedFields (the entries of manager
// for the status subresource): the types of the conditions whose message
// it set, and whether it set status.addresses. A Gateway that moved to
// another controller keeps what that controller wrote since (it owns the
// message of a condition it set, and the addresses if it set them), and
// loses with Without only what sllbrd's controller left there.
func Written(gw *gatewayv1.Gateway, manager string) (conditions []string, addresses bool, err error) {
	for _, mf := range gw.ManagedFields {
		if mf.Manager != manager || mf.Subresource != "status" || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status struct {
				Conditions map[string]map[string]json.RawMessage `json:"f:conditions"`
				Addresses  json.RawMessage                       `json:"f:addresses"`
			} `json:"f:status"`
		}
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			return nil, false, fmt.Errorf("managedFields of %s: %w", manager, err)
		}
		for key, item := range fields.Status.Conditions {
			var k struct {
				Type string `json:"type"`
			}
			if _, set := item["f:message"]; !set || !strings.HasPrefix(key, "k:") || json.Unmarshal([]byte(key[2:]), &k) != nil || k.Type == "" {
				continue
			}
			conditions = append(conditions, k.Type)
		}
		addresses = addresses || fields.Status.Addresses != nil
	}
	slices.Sort(conditions)
	return slices.Compact(conditions), addresses, nil
}

// Without returns a copy of the status without the conditions of the
// given types, and without the addresses when addresses is true.
func Without(s gatewayv1.GatewayStatus, conditions []string, addresses bool) gatewayv1.GatewayStatus {
	out := *s.DeepCopy()
	out.Conditions = slices.DeleteFunc(out.Conditions, func(c metav1.Condition) bool { return slices.Contains(conditions, c.Type) })
	if addresses {
		out.Addresses = nil
	}
	return out
}
