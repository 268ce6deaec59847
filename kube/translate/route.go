package translate

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/model"
	"github.com/sllbrd/sllbrd/model/vip"
)

func translateRoutes(gw model.Gateway, routes []*v1alpha1.L34Route, services serviceSet, o options, ps *problems) []model.Route {
	var out []model.Route
	for _, r := range inScope(gw, routes) {
		if !slices.ContainsFunc(r.Spec.ParentRefs, func(p gatewayv1.ParentReference) bool {
			return isGateway(p, r.Namespace, gw)
		}) {
			continue // another Gateway's route
		}
		var faults problems
		route := translateRoute(r, services, o, &faults)
		*ps = append(*ps, faults...)
		if len(faults) == 0 {
			out = append(out, route)
		}
	}
	slices.SortStableFunc(out, func(a, b model.Route) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// isGateway reports whether a parentRef of a route in namespace ns names gw.
func isGateway(p gatewayv1.ParentReference, ns string, gw model.Gateway) bool {
	group, kind, refNS := gatewayv1.GroupName, "Gateway", ns
	if p.Group != nil {
		group = string(*p.Group)
	}
	if p.Kind != nil {
		kind = string(*p.Kind)
	}
	if p.Namespace != nil {
		refNS = string(*p.Namespace)
	}
	return group == gatewayv1.GroupName && kind == "Gateway" && refNS == gw.Namespace && string(p.Name) == gw.Name
}

// translateRoute checks every field of r, reporting each fault; the route is
// usable only if none was reported.
func translateRoute(r *v1alpha1.L34Route, services serviceSet, o options, ps *problems) model.Route {
	spec := &r.Spec
	route := model.Route{Name: qualified(r), Priority: spec.Priority}
	if len(spec.ParentRefs) != 1 {
		ps.add(KindL34Route, r, "spec.parentRefs", "must name exactly one Gateway, has %d", len(spec.ParentRefs))
	}
	route.Service = backendService(r, services, ps)
	if spec.Priority < 1 {
		ps.add(KindL34Route, r, "spec.priority", "%d is not >= 1", spec.Priority)
	}
	// The destinations are VIPs by model/vip, which the CRD's CEL rules say
	// too (objects created before those rules, and those of manifest
	// files, pass no API server).
	route.Destinations = parseEach(r, "spec.destinationCIDRs", spec.DestinationCIDRs, vip.Parse, ps)
	if len(spec.DestinationCIDRs) == 0 {
		ps.add(KindL34Route, r, "spec.destinationCIDRs", "at least one VIP is required")
	}
	route.Sources = parseEach(r, "spec.sourceCIDRs", spec.SourceCIDRs, parseCIDR, ps)
	route.SourcePorts = parseEach(r, "spec.sourcePorts", spec.SourcePorts, model.ParsePortRange, ps)
	route.DestinationPorts = parseEach(r, "spec.destinationPorts", spec.DestinationPorts, model.ParsePortRange, ps)
	route.Protocols = parseProtocols(r, spec.Protocols, ps)
	route.ByteMatches = parseByteMatches(r, spec.ByteMatches, roomFor(o.copyRange, route.Destinations), ps)
	return route
}

// backendService returns the name of the route's one backend Service.
func backendService(r *v1alpha1.L34Route, services serviceSet, ps *problems) string {
	refs := r.Spec.BackendRefs
	if len(refs) != 1 {
		ps.add(KindL34Route, r, "spec.backendRefs", "must name exactly one Service, has %d", len(refs))
		return ""
	}
	ref := refs[0]
	const field = "spec.backendRefs[0]"
	switch {
	case ref.Group != nil && *ref.Group != "", ref.Kind != nil && *ref.Kind != "Service":
		ps.add(KindL34Route, r, field, "must be a core Service")
		return ""
	case ref.Namespace != nil && string(*ref.Namespace) != r.Namespace:
		ps.add(KindL34Route, r, field, "Service must be in the route's namespace %s", r.Namespace)
		return ""
	}
	name := string(ref.Name)
	if ok, why := services.usable(name); !ok {
		ps.add(KindL34Route, r, field, "Service %s %s", name, why)
	}
	return name
}

// parseEach parses each item of a list field of r, reporting each one
// that does not parse.
func parseEach[S ~string, T any](r *v1alpha1.L34Route, field string, in []S, parse func(string) (T, error), ps *problems) []T {
	var out []T
	for i, s := range in {
		v, err := parse(string(s))
		if err != nil {
			ps.add(KindL34Route, r, fmt.Sprintf("%s[%d]", field, i), "%v", err)
			continue
		}
		out = append(out, v)
	}
	return out
}

// parseCIDR reads a source CIDR; host bits are ignored.
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	return p.Masked(), err
}

// parseProtocols returns the distinct protocols in the order written.
func parseProtocols(r *v1alpha1.L34Route, in []v1alpha1.Protocol, ps *problems) []model.Protocol {
	if len(in) == 0 {
		ps.add(KindL34Route, r, "spec.protocols", "at least one of TCP, UDP, SCTP is required")
	}
	var out []model.Protocol
	for i, s := range in {
		p, err := model.ParseProtocol(string(s))
		if err != nil {
			ps.add(KindL34Route, r, fmt.Sprintf("spec.protocols[%d]", i), "%v", err)
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// parseByteMatches parses the byte matches of r, reporting each one that
// does not parse or that reads beyond room.
func parseByteMatches(r *v1alpha1.L34Route, in []v1alpha1.ByteMatch, room transportRoom, ps *problems) []model.ByteMatch {
	var out []model.ByteMatch
	for i, s := range in {
		field := fmt.Sprintf("spec.byteMatches[%d]", i)
		m, err := model.ParseByteMatch(string(s))
		if err != nil {
			ps.add(KindL34Route, r, field, "%v", err)
			continue
		}
		if !room.check(r, field, m, ps) {
			continue
		}
		out = append(out, m)
	}
	return out
}
