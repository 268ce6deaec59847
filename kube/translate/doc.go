// Package translate is the one place that turns Kubernetes objects into
// sllbrd's desired state: a Snapshot of typed objects (a Gateway, L34Routes,
// Services, EndpointSlices, GatewayRouters and the Secrets of their BGP
// passwords, as informers' listers or the manifest reader return them)
// becomes a model.State plus a list of Problems.
//
// Promises:
//   - Only objects in the Gateway's namespace are considered; everything else
//     in the Snapshot is ignored silently, as are objects that belong to
//     another Gateway (route parentRef, proxy-name label).
//   - Every invalid route, Service, endpoint or router is left out of the
//     State and reported as a Problem naming the object and the field; one bad
//     object never disables good ones. An endpoint is never guessed: without a
//     valid, unique identifier in 0..max-1, or outside the Gateway's
//     network-subnets, it is skipped.
//   - The State is deterministic: routes are ordered by priority (highest
//     first) then namespace/name, Services and routers by name, endpoints by
//     identifier. Translate never modifies its input and leaves
//     State.Generation zero for the caller to set.
//   - Every Route.Service names a Service present in State.Services.
//   - Every Route.Destination is a VIP by model/vip (the rule the CRD says
//     in CEL and the target side applies): a route with a destination that
//     is none (loopback, unspecified, link-local, multicast, broadcast,
//     IPv4-mapped, not a host prefix) is a Problem and left out. A Gateway
//     network-subnets entry that is IPv4-mapped IPv6 is a Problem (a target
//     refuses such a subnet).
//   - Given the dataplane's copy range (WithCopyRange), a route with a byte
//     match that ends beyond the transport bytes a packet of one of its
//     destination families can bring within the copy range (the copy range
//     less the smallest IP header: 20 bytes for IPv4, 40 for IPv6) is a
//     Problem and left out: it could never match, and saying so beats a
//     silent never-match. Longer headers (IPv4 options, IPv6 extension
//     headers) can still push a match out of reach for some packets.
//
// Gateway, MaxEndpoints and IsParent (parts.go) answer one question each
// with the same rules, for the controller (kube/controller), which needs a
// part of a translation.
//
// Secrets: a GatewayRouter's spec.bgp.passwordSecretRef is resolved against
// the Snapshot's Secrets of the Gateway's namespace (data, or stringData as
// written in a manifest file). A missing Secret or key, or a password that
// is empty or longer than 80 bytes, is a Problem that leaves the router out;
// no Problem quotes a password, and model.Password never prints it.
//
// Defaults: a Service without the max-endpoints annotation gets
// kube.DefaultMaxEndpoints (32); accepted values are 1..kube.MaxMaxEndpoints.
// GatewayRouter fields left empty get the v1alpha1 Default* values, as the
// API server would apply them from the CRD. SCTP flows hash on ports only
// unless the Service's annotation meridio-experiment/sctp-hash says
// "addresses-and-ports". Endpoint liveness (model.Liveness) comes from the
// Service's annotation meridio-experiment/endpoint-liveness: absent, the
// kube.DefaultLiveness* values (200ms, 4, 5s) probed by ICMP; "off", the
// zero value; otherwise
// "interval=DURATION,multiplier=N,hold-down=DURATION,probe=icmp|bfd" with
// any key left out taking its default (probe icmp), within the
// kube.*Liveness* bounds.
//
// A Service with an invalid annotation (max-endpoints, sctp-hash,
// endpoint-liveness) is left out with one Problem per invalid annotation;
// the routes that name it are left out with a Problem that says why.
package translate
