package translate

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/model"
)

// serviceSet is the outcome of translating the Services of a Gateway.
type serviceSet struct {
	accepted []model.Service
	// rejected says, for each Service of the namespace that is not accepted,
	// why routes cannot use it.
	rejected map[string]string
}

// usable reports whether a route may name the Service, and why not.
func (s serviceSet) usable(name string) (bool, string) {
	if why, ok := s.rejected[name]; ok {
		return false, why
	}
	for _, svc := range s.accepted {
		if svc.Name == name {
			return true, ""
		}
	}
	return false, "does not exist"
}

func translateServices(gw model.Gateway, services []*corev1.Service,
	endpointSlices []*discoveryv1.EndpointSlice, ps *problems) serviceSet {
	set := serviceSet{rejected: make(map[string]string)}
	slicesInScope := inScope(gw, endpointSlices)
	for _, svc := range inScope(gw, services) {
		if proxy := svc.Labels[kube.LabelServiceProxyName]; proxy != gw.Name {
			set.rejected[svc.Name] = fmt.Sprintf("is not handled by Gateway %s (label %s=%q)",
				gw.Name, kube.LabelServiceProxyName, proxy)
			continue
		}
		s, why := serviceParameters(svc, ps)
		if len(why) > 0 {
			set.rejected[svc.Name] = "is invalid: " + strings.Join(why, "; ")
			continue
		}
		s.Name = svc.Name
		s.Endpoints = translateEndpoints(gw, svc.Name, s.MaxEndpoints, slicesOf(svc.Name, slicesInScope), ps)
		set.accepted = append(set.accepted, s)
	}
	return set
}

// serviceParameters reads a Service's annotations into a model.Service
// without name or endpoints. Each invalid annotation is a Problem, and why
// says it for the routes that name the Service.
func serviceParameters(svc *corev1.Service, ps *problems) (s model.Service, why []string) {
	fault := func(annotation string, err error) {
		ps.add(KindService, svc, "metadata.annotations["+annotation+"]", "%v", err)
		why = append(why, "annotation "+annotation+": "+err.Error())
	}
	var err error
	if s.MaxEndpoints, err = parseMaxEndpoints(svc.Annotations); err != nil {
		fault(kube.AnnotationMaxEndpoints, err)
	}
	if s.SCTPHashPorts, err = parseSCTPHash(svc.Annotations); err != nil {
		fault(kube.AnnotationSCTPHash, err)
	}
	if s.Liveness, err = parseLiveness(svc.Annotations); err != nil {
		fault(kube.AnnotationEndpointLiveness, err)
	}
	return s, why
}

func parseMaxEndpoints(annotations map[string]string) (int, error) {
	raw, ok := annotations[kube.AnnotationMaxEndpoints]
	if !ok {
		return kube.DefaultMaxEndpoints, nil
	}
	return parseIntIn(raw, 1, kube.MaxMaxEndpoints)
}

// parseIntIn reads a decimal integer in lo..hi.
func parseIntIn(s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q is not an integer in %d..%d", s, lo, hi)
	}
	return n, nil
}

// parseSCTPHash reads how SCTP flows are hashed: "ports" (the default: a
// multihomed association reaches one target from any of its addresses) or
// "addresses-and-ports" (like TCP).
func parseSCTPHash(annotations map[string]string) (portsOnly bool, err error) {
	switch raw, ok := annotations[kube.AnnotationSCTPHash]; {
	case !ok || raw == "ports":
		return true, nil
	case raw == "addresses-and-ports":
		return false, nil
	default:
		return false, fmt.Errorf("%q is neither \"ports\" nor \"addresses-and-ports\"", raw)
	}
}

// slicesOf returns the EndpointSlices labelled as belonging to the Service.
func slicesOf(service string, slices []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, s := range slices {
		if s.Labels[kube.LabelServiceName] == service {
			out = append(out, s)
		}
	}
	return out
}
