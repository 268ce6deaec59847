package kube

import "time"

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

	// AnnotationEndpointLiveness on a Service configures how each SLLBR
	// checks its endpoints itself on the target network: "off", or a
	// comma-separated list of interval=DURATION, multiplier=N,
	// hold-down=DURATION and probe=icmp|bfd, absent keys taking the
	// DefaultLiveness* values and probe icmp (echo, answered by the
	// target's kernel); bfd runs BFD sessions answered by the target side,
	// whose timing the controller writes to the pods (docs/liveness.md).
	AnnotationEndpointLiveness = "meridio-experiment/endpoint-liveness"

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

	// Endpoint liveness (AnnotationEndpointLiveness) when the annotation is
	// absent or leaves a key out: a probe every 200 ms, an endpoint dead
	// after 4 missed intervals (detection 800 ms: under a second, while one
	// or two lost probes are not a failure), alive again after answering
	// for 5 s (a flapping target does not churn the Maglev table).
	DefaultLivenessInterval   = 200 * time.Millisecond
	DefaultLivenessMultiplier = 4
	DefaultLivenessHoldDown   = 5 * time.Second
	// Bounds of the liveness keys: the interval, the multiplier, the
	// detection time (interval × multiplier) and the hold-down. 10 ms to
	// 1,000 endpoints is already 100,000 probes a second; a detection
	// beyond a minute is no faster than the API's own (the node-monitor
	// grace period is 40 s).
	MinLivenessInterval   = 10 * time.Millisecond
	MaxLivenessInterval   = 10 * time.Second
	MaxLivenessMultiplier = 50
	MaxLivenessDetection  = time.Minute
	MaxLivenessHoldDown   = 10 * time.Minute

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
