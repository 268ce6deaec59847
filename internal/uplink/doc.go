// Package uplink supervises the LB's data-centre gateways: it runs the BGP
// speaker and the BFD sessions of the GatewayRouters, couples them, and
// publishes the gateways the return path may use.
//
// Coupling rules:
//   - BFD Down takes that gateway's BGP session down at once (and so its
//     default route out of the return path). A peer signalling AdminDown is
//     not a failure (RFC 5882 section 3.2): nothing is taken down.
//   - BFD Up brings the BGP session back. Repeated failures are damped: the
//     n-th Up within DampingWindow of the previous failures waits
//     min(2^(n-2) s, MaxUpDelay) first, so a flapping link cannot flap BGP.
//   - A static gateway (GatewayRouter without BGP) is a return-path next hop
//     while its BFD session is Up, or always when it has no BFD.
//   - The return path's next hops are the BGP gateways advertising a default
//     route plus the static gateways that are up. Every change is handed to
//     the callback given to New (the reconcile loop).
//
// bgp and bfd never import each other; this package is where they meet.
package uplink
