package manifest

import (
	"fmt"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube/translate"
)

// Snapshot returns the translator's input for the Gateway named gateway,
// either "name" (which must then be unique across namespaces) or
// "namespace/name".
func (o *Objects) Snapshot(gateway string) (translate.Snapshot, error) {
	gw, err := o.findGateway(gateway)
	if err != nil {
		return translate.Snapshot{}, err
	}
	return translate.Snapshot{
		Gateway:        gw,
		Routes:         o.Routes,
		Services:       o.Services,
		EndpointSlices: o.EndpointSlices,
		Routers:        o.Routers,
		Secrets:        o.Secrets,
	}, nil
}

func (o *Objects) findGateway(gateway string) (*gatewayv1.Gateway, error) {
	ns, name, qualified := strings.Cut(gateway, "/")
	if !qualified {
		ns, name = "", gateway
	}
	var found []*gatewayv1.Gateway
	for _, g := range o.Gateways {
		if g.Name == name && (!qualified || g.Namespace == ns) {
			found = append(found, g)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w %q is defined", translate.ErrNoGateway, gateway)
	case 1:
		return found[0], nil
	}
	var where []string
	for _, g := range found {
		where = append(where, g.Namespace+"/"+g.Name)
	}
	return nil, fmt.Errorf("Gateway %q is ambiguous (%s): name it as namespace/name",
		gateway, strings.Join(where, ", "))
}
