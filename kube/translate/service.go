package translate

import (
	"fmt"
	"strconv"

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
		maxEndpoints, err := parseMaxEndpoints(svc.Annotations)
		if err != nil {
			ps.add(KindService, svc, "metadata.annotations["+kube.AnnotationMaxEndpoints+"]", "%v", err)
			set.rejected[svc.Name] = "is invalid: " + err.Error()
			continue
		}
		sctpPorts, err := parseSCTPHash(svc.Annotations)
		if err != nil {
			ps.add(KindService, svc, "metadata.annotations["+kube.AnnotationSCTPHash+"]", "%v", err)
			set.rejected[svc.Name] = "is invalid: " + err.Error()
			continue
		}
		set.accepted = append(set.accepted, model.Service{
			Name:          svc.Name,
			MaxEndpoints:  maxEndpoints,
			SCTPHashPorts: sctpPorts,
			Endpoints:     translateEndpoints(gw, svc.Name, maxEndpoints, slicesOf(svc.Name, slicesInScope), ps),
		})
	}
	return set
}

func parseMaxEndpoints(annotations map[string]string) (int, error) {
	raw, ok := annotations[kube.AnnotationMaxEndpoints]
	if !ok {
		return kube.DefaultMaxEndpoints, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > kube.MaxMaxEndpoints {
		return 0, fmt.Errorf("%q is not an integer in 1..%d", raw, kube.MaxMaxEndpoints)
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
