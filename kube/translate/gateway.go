package translate

import (
	"encoding/json"
	"fmt"
	"net/netip"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/model"
)

// network is one entry of the meridio-experiment/networks annotation.
type network struct {
	Name      string `json:"name"`
	Interface string `json:"interface"`
}

func annotationField(key string) string {
	return "spec.infrastructure.annotations[" + key + "]"
}

func translateGateway(g *gatewayv1.Gateway, ps *problems) model.Gateway {
	gw := model.Gateway{Namespace: g.Namespace, Name: g.Name}
	var annotations map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue
	if g.Spec.Infrastructure != nil {
		annotations = g.Spec.Infrastructure.Annotations
	}
	if raw, ok := annotations[kube.AnnotationNetworks]; ok {
		gw.Networks = parseNetworks(g, string(raw), ps)
	} else {
		ps.add(KindGateway, g, annotationField(kube.AnnotationNetworks),
			"missing: no interfaces towards the targets are known")
	}
	if raw, ok := annotations[kube.AnnotationNetworkSubnets]; ok {
		gw.Subnets = parseSubnets(g, string(raw), ps)
	} else {
		ps.add(KindGateway, g, annotationField(kube.AnnotationNetworkSubnets),
			"missing: every endpoint will be skipped as outside the network subnets")
	}
	return gw
}

func parseNetworks(g *gatewayv1.Gateway, raw string, ps *problems) []model.Network {
	field := annotationField(kube.AnnotationNetworks)
	var entries []network
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		ps.add(KindGateway, g, field, "not a JSON list of {name, interface}: %v", err)
		return nil
	}
	var out []model.Network
	for i, e := range entries {
		if e.Interface == "" {
			ps.add(KindGateway, g, fmt.Sprintf("%s[%d]", field, i), "network %q has no interface", e.Name)
			continue
		}
		out = append(out, model.Network{Name: e.Name, Interface: e.Interface})
	}
	return out
}

func parseSubnets(g *gatewayv1.Gateway, raw string, ps *problems) []netip.Prefix {
	field := annotationField(kube.AnnotationNetworkSubnets)
	var entries []string
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		ps.add(KindGateway, g, field, "not a JSON list of CIDRs: %v", err)
		return nil
	}
	var out []netip.Prefix
	for i, e := range entries {
		p, err := netip.ParsePrefix(e)
		switch {
		case err != nil:
			ps.add(KindGateway, g, fmt.Sprintf("%s[%d]", field, i), "%v", err)
		case p.Addr().Is4In6(): // a target refuses it whole (kube/targetpod)
			ps.add(KindGateway, g, fmt.Sprintf("%s[%d]", field, i), "%s is IPv4-mapped IPv6: write the IPv4 prefix", e)
		default:
			out = append(out, p.Masked())
		}
	}
	return out
}

// inSubnets reports whether a lies in one of the Gateway's subnets.
func inSubnets(gw model.Gateway, a netip.Addr) bool {
	for _, p := range gw.Subnets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
