package translate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/model"
)

// candidate is an endpoint address that passed the per-slice checks; it is
// accepted only if no other candidate of the Service contradicts it.
type candidate struct {
	ep    model.Endpoint
	slice *discoveryv1.EndpointSlice
	field string
}

const identifiersField = "metadata.annotations[" + kube.AnnotationEndpointIdentifiers + "]"

// translateEndpoints returns the valid endpoints of one Service, ordered by
// identifier. An address listed twice with the same identifier counts once
// (ready if any copy is ready).
func translateEndpoints(gw model.Gateway, service string, maxEndpoints int,
	endpointSlices []*discoveryv1.EndpointSlice, ps *problems) []model.Endpoint {
	var cands []candidate
	for _, s := range endpointSlices {
		cands = append(cands, sliceCandidates(gw, maxEndpoints, s, ps)...)
	}
	cands = mergeSameAddress(cands)
	var out []model.Endpoint
	for i, c := range cands {
		if other, ok := conflicting(cands, i); ok {
			ps.add(KindEndpointSlice, c.slice, c.field,
				"endpoint %s of Service %s skipped: %s", c.ep.Addr, service, conflictReason(c, other))
			continue
		}
		out = append(out, c.ep)
	}
	slices.SortFunc(out, func(a, b model.Endpoint) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func sliceCandidates(gw model.Gateway, maxEndpoints int, s *discoveryv1.EndpointSlice, ps *problems) []candidate {
	if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
		ps.add(KindEndpointSlice, s, "addressType", "%q is not supported (IPv4 or IPv6); slice skipped", s.AddressType)
		return nil
	}
	ids := parseIdentifiers(s, ps)
	var out []candidate
	for i, ep := range s.Endpoints {
		ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
		for j, raw := range ep.Addresses {
			field := fmt.Sprintf("endpoints[%d].addresses[%d]", i, j)
			addr, err := netip.ParseAddr(raw)
			if err != nil {
				ps.add(KindEndpointSlice, s, field, "endpoint skipped: %v", err)
				continue
			}
			if why := endpointFault(gw, maxEndpoints, ids, addr); why != "" {
				ps.add(KindEndpointSlice, s, field, "endpoint %s skipped: %s", addr, why)
				continue
			}
			out = append(out, candidate{
				ep:    model.Endpoint{ID: ids[addr], Addr: addr, Ready: ready},
				slice: s,
				field: field,
			})
		}
	}
	return out
}

// endpointFault says what is wrong with one endpoint address, or "".
func endpointFault(gw model.Gateway, maxEndpoints int, ids map[netip.Addr]int, addr netip.Addr) string {
	id, ok := ids[addr]
	switch {
	case !ok:
		return "no identifier in annotation " + kube.AnnotationEndpointIdentifiers
	case id < 0 || id >= maxEndpoints:
		return fmt.Sprintf("identifier %d is outside 0..%d (max-endpoints %d)", id, maxEndpoints-1, maxEndpoints)
	case !inSubnets(gw, addr):
		return fmt.Sprintf("address is outside the Gateway's network subnets %v", gw.Subnets)
	}
	return ""
}

// parseIdentifiers reads the slice's IP -> identifier annotation. Entries
// whose key is not an IP are reported and dropped.
func parseIdentifiers(s *discoveryv1.EndpointSlice, ps *problems) map[netip.Addr]int {
	raw, ok := s.Annotations[kube.AnnotationEndpointIdentifiers]
	if !ok {
		return nil
	}
	var entries map[string]int
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		ps.add(KindEndpointSlice, s, identifiersField, "not a JSON object of IP to integer: %v", err)
		return nil
	}
	ids := make(map[netip.Addr]int, len(entries))
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		id := entries[key]
		addr, err := netip.ParseAddr(key)
		if err != nil {
			ps.add(KindEndpointSlice, s, identifiersField, "key %q: %v", key, err)
			continue
		}
		ids[addr] = id
	}
	return ids
}

// mergeSameAddress folds candidates with equal address and identifier into
// the first one, which is ready if any of them is.
func mergeSameAddress(cands []candidate) []candidate {
	var out []candidate
	for _, c := range cands {
		i := slices.IndexFunc(out, func(o candidate) bool { return o.ep.Addr == c.ep.Addr && o.ep.ID == c.ep.ID })
		if i < 0 {
			out = append(out, c)
			continue
		}
		out[i].ep.Ready = out[i].ep.Ready || c.ep.Ready
	}
	return out
}

// conflicting finds another candidate with the same identifier in the same
// address family (a dual-stack endpoint has one address of each family under
// one identifier), or the same
// address as cands[i]; after mergeSameAddress they always differ in the other.
func conflicting(cands []candidate, i int) (candidate, bool) {
	for j, o := range cands {
		sameIDSameFamily := o.ep.ID == cands[i].ep.ID && o.ep.Addr.Is4() == cands[i].ep.Addr.Is4()
		if j != i && (sameIDSameFamily || o.ep.Addr == cands[i].ep.Addr) {
			return o, true
		}
	}
	return candidate{}, false
}

func conflictReason(c, other candidate) string {
	where := fmt.Sprintf("EndpointSlice %s %s", qualified(other.slice), other.field)
	if c.ep.ID == other.ep.ID {
		return fmt.Sprintf("identifier %d is also given to %s (%s)", c.ep.ID, other.ep.Addr, where)
	}
	return fmt.Sprintf("address also has identifier %d (%s)", other.ep.ID, where)
}
