package kube

// Labels and annotations of the sllbrd contract (DESIGN.md, "Contracts").
const (
	// LabelServiceProxyName on a Service or GatewayRouter names the Gateway
	// that handles it.
	LabelServiceProxyName = "service.kubernetes.io/service-proxy-name"

	// LabelServiceName on an EndpointSlice names the Service it belongs to.
	LabelServiceName = "kubernetes.io/service-name"

	// AnnotationEndpointIdentifiers on an EndpointSlice holds a JSON object
	// mapping each endpoint IP to its identifier, e.g. {"169.111.100.2": 0}.
	AnnotationEndpointIdentifiers = "meridio-experiment/endpoint-identifiers"

	// AnnotationMaxEndpoints on a Service bounds its identifiers: they lie in
	// 0..max-1. See DefaultMaxEndpoints.
	AnnotationMaxEndpoints = "meridio-experiment/max-endpoints"

	// AnnotationSCTPHash on a Service chooses the SCTP flow key: "ports"
	// (default; multihoming-safe) or "addresses-and-ports".
	AnnotationSCTPHash = "meridio-experiment/sctp-hash"

	// AnnotationNetworks in a Gateway's .spec.infrastructure.annotations is a
	// JSON list of {"name", "interface"}: the LB's interfaces towards the
	// targets.
	AnnotationNetworks = "meridio-experiment/networks"

	// AnnotationNetworkSubnets in a Gateway's .spec.infrastructure.annotations
	// is a JSON list of CIDRs in which endpoint IPs must lie.
	AnnotationNetworkSubnets = "meridio-experiment/network-subnets"
)

// Defaults and bounds of the annotations above.
const (
	// DefaultMaxEndpoints applies when a Service has no max-endpoints
	// annotation; it is NFQLB's default N.
	DefaultMaxEndpoints = 32
	// MaxMaxEndpoints is the largest accepted max-endpoints value.
	MaxMaxEndpoints = 1024
	// DefaultNamespace holds objects that do not name a namespace.
	DefaultNamespace = "default"
)

// Names the controller (sllbrd controller) writes and reads besides the
// contract above.
const (
	// ControllerName is the spec.controllerName of the GatewayClasses whose
	// Gateways sllbrd's controller owns, and the controllerName of the
	// L34Route status entries it writes.
	ControllerName = "meridio-experiment/stateless-load-balancer"
	// AnnotationNetworkStatus on a pod is Multus' report of its networks: a
	// JSON list of {name, interface, ips, mac, default, dns}.
	AnnotationNetworkStatus = "k8s.v1.cni.cncf.io/network-status"
	// AnnotationMultusNetworks asks Multus for a pod's secondary networks;
	// the SLLBR pods get the one of their Gateway's infrastructure.
	AnnotationMultusNetworks = "k8s.v1.cni.cncf.io/networks"
	// LabelDummyServiceSelector in a Service's selector only keeps
	// Kubernetes' own EndpointSlice controller away; the controller ignores
	// it when selecting pods.
	LabelDummyServiceSelector = "meridio-experiment/dummy-service-selector"
	// LabelEndpointSliceManagedBy names the writer of an EndpointSlice;
	// the controller writes and reads only slices where it is
	// EndpointSliceManager.
	LabelEndpointSliceManagedBy = "endpointslice.kubernetes.io/managed-by"
	EndpointSliceManager        = "sllbrd-controller.meridio-experiment"
	// LabelGatewayName (Gateway API, GEP-1762) names the Gateway on the
	// SLLBR Deployment and its pods.
	LabelGatewayName = "gateway.networking.k8s.io/gateway-name"
	// LabelComponent is ComponentSLLBR on the SLLBR Deployment and its pods:
	// with LabelGatewayName it selects the SLLBR pods of one Gateway.
	LabelComponent = "app.kubernetes.io/component"
	ComponentSLLBR = "sllbr"
	// AnnotationTargetNetwork on an application pod (an endpoint of a
	// Service of an owned Gateway) is the network configuration the
	// controller wants in it: JSON, kube/targetpod.Desired (docs/target.md).
	AnnotationTargetNetwork = "meridio-experiment/target-network"
	// AnnotationTargetNetworkStatus on the same pod is what `sllbrd target`
	// applied: JSON, kube/targetpod.Status.
	AnnotationTargetNetworkStatus = "meridio-experiment/target-network-status"
	// AnnotationTargetAgent on an application pod says which agent applies
	// its network configuration, so that exactly one does:
	// TargetAgentSidecar (the pod runs `sllbrd target` as a sidecar) or
	// TargetAgentNode (the node daemon, `sllbrd target --node`); absent
	// means TargetAgentNode, so an application needs nothing but its
	// Multus annotation. The sidecar applies nothing in a pod not marked
	// TargetAgentSidecar, the node daemon nothing in a pod marked so.
	AnnotationTargetAgent = "meridio-experiment/target-agent"
	TargetAgentSidecar    = "sidecar"
	TargetAgentNode       = "node"
)
