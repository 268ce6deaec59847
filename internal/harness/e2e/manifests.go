package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Target names the lab's targets; service-a has all three, service-b only
// t3, service-c only t2.
const labManifests = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: sllb-a
spec:
  gatewayClassName: meridio-experiment-stateless-load-balancer
  listeners:
  - {name: all, port: 4000, protocol: TCP}
  infrastructure:
    annotations:
      meridio-experiment/networks: '[{"name":"macvlan-nad-1","interface":"net1"}]'
      meridio-experiment/network-subnets: '["169.111.100.0/24","fd00:111::/64"]'
{{routers}}
{{services}}
{{routes}}
{{extra}}
`

// Service is a Service and its EndpointSlices for the lab's targets.
type Service struct {
	Name    string
	Targets []int        // lab target numbers
	IDs     map[int]int  // target -> identifier (missing: its position in Targets)
	Ready   map[int]bool // target -> ready (missing: ready)
}

func (s Service) id(pos, target int) int {
	if id, ok := s.IDs[target]; ok {
		return id
	}
	return pos
}

// Route is an L34Route in YAML flow style fields (without parentRefs).
type Route struct {
	Name, Service string
	Priority      int
	Fields        string // extra spec fields, e.g. `protocols: [UDP], destinationPorts: ["5005"]`
}

// Router is a GatewayRouter for the lab's gateway. Spec is the YAML flow
// mapping after the address and interface: `static: {}` (the default), or a
// bgp block.
type Router struct {
	Name, Address string
	Spec          string
}

// StaticRouters are the lab gateway as static next hops, both families.
var StaticRouters = []Router{{Name: "gw-v4", Address: "169.254.100.150", Spec: "static: {}"}, {Name: "gw-v6", Address: "fd00:169::150", Spec: "static: {}"}}

// SeedBGP is the seed's GatewayRouter BGP and BFD settings.
const SeedBGP = `bgp: {localASN: 8103, remoteASN: 4248829953, holdTime: 24s, localPort: 10179, remotePort: 10179, bfd: {switch: true, minTx: 300ms, minRx: 300ms, multiplier: 5}}`

// Config is what WriteManifests writes besides the Gateway.
type Config struct {
	Routers  []Router // nil: StaticRouters
	Services []Service
	Routes   []Route
	// Extra are more YAML documents (each starting with "---"), e.g. the
	// Secret of a GatewayRouter's BGP password.
	Extra string
}

// LabVIPs are the destinations every test route uses.
const LabVIPs = `destinationCIDRs: [20.0.0.1/32, "2001:db8::1/128"]`

// WriteManifests writes the lab's Gateway, static routers, services and
// routes to dir/sllb-a.yaml (atomically: sllbrd never reads half a file).
func WriteManifests(dir string, services []Service, routes []Route) error {
	return Write(dir, Config{Services: services, Routes: routes})
}

// Write writes c with the lab's Gateway to dir/sllb-a.yaml, atomically.
func Write(dir string, c Config) error {
	var svcs, rts, rtrs strings.Builder
	if c.Routers == nil {
		c.Routers = StaticRouters
	}
	for _, r := range c.Routers {
		fmt.Fprintf(&rtrs, "---\napiVersion: meridio.experiment.gateway.api.poc/v1alpha1\nkind: GatewayRouter\nmetadata:\n  name: %s\n  labels: {service.kubernetes.io/service-proxy-name: sllb-a}\nspec: {address: %q, interface: vlan-100, %s}\n",
			r.Name, r.Address, r.Spec)
	}
	for _, s := range c.Services {
		fmt.Fprintf(&svcs, "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  labels: {service.kubernetes.io/service-proxy-name: sllb-a}\nspec: {clusterIP: None}\n", s.Name)
		for _, fam := range []struct{ name, typ, prefix string }{{"v4", "IPv4", "169.111.100."}, {"v6", "IPv6", "fd00:111::"}} {
			var ids, eps []string
			for pos, t := range s.Targets {
				addr := fmt.Sprintf("%s%d", fam.prefix, 10+t)
				ids = append(ids, fmt.Sprintf("%q:%d", addr, s.id(pos, t)))
				ready, set := s.Ready[t]
				eps = append(eps, fmt.Sprintf("- addresses: [%q]\n  conditions: {ready: %v}", addr, ready || !set))
			}
			fmt.Fprintf(&svcs, "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: %s-%s\n  labels: {kubernetes.io/service-name: %s}\n  annotations:\n    meridio-experiment/endpoint-identifiers: '{%s}'\naddressType: %s\nendpoints:\n%s\n",
				s.Name, fam.name, s.Name, strings.Join(ids, ","), fam.typ, strings.Join(eps, "\n"))
		}
	}
	for _, r := range c.Routes {
		fmt.Fprintf(&rts, "---\napiVersion: meridio.experiment.gateway.api.poc/v1alpha1\nkind: L34Route\nmetadata:\n  name: %s\nspec: {parentRefs: [{name: sllb-a}], backendRefs: [{name: %s, port: 1}], priority: %d, %s, %s}\n",
			r.Name, r.Service, r.Priority, LabVIPs, r.Fields)
	}
	text := strings.NewReplacer("{{routers}}", rtrs.String(), "{{services}}", svcs.String(), "{{routes}}", rts.String(), "{{extra}}", c.Extra).Replace(labManifests)
	tmp := filepath.Join(dir, ".sllb-a.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "sllb-a.yaml"))
}
