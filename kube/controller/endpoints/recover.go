package endpoints

import (
	"encoding/json"
	"net/netip"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller/identifiers"
)

// Claims recovers the identifier assignment from the Service's slices: for
// every endpoint that points at a pod (targetRef with a UID), the
// identifiers its addresses have in the slice's annotation. A slice whose
// annotation does not parse yields no claims (its pods get identifiers
// anew).
func Claims(slices []*discoveryv1.EndpointSlice) []identifiers.Claim {
	var out []identifiers.Claim
	for _, s := range slices {
		ids := annotationIDs(s)
		for _, ep := range s.Endpoints {
			if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID == "" {
				continue
			}
			for _, raw := range ep.Addresses {
				a, err := netip.ParseAddr(raw)
				if err != nil {
					continue
				}
				if id, ok := ids[a]; ok {
					out = append(out, identifiers.Claim{UID: string(ep.TargetRef.UID), ID: id})
				}
			}
		}
	}
	return out
}

func annotationIDs(s *discoveryv1.EndpointSlice) map[netip.Addr]int {
	var raw map[string]int
	if err := json.Unmarshal([]byte(s.Annotations[kube.AnnotationEndpointIdentifiers]), &raw); err != nil {
		return nil
	}
	out := make(map[netip.Addr]int, len(raw))
	for k, id := range raw {
		if a, err := netip.ParseAddr(k); err == nil {
			out[a] = id
		}
	}
	return out
}
