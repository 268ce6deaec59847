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
