// Package uplink supervises the LB's data-centre gateways: it runs the BGP
// speaker and the BFD sessions of the GatewayRouters, couples them, and
// publishes the gateways the return path may use.
//
// Coupling rules:
//   - BFD Down takes that gateway's BGP session down at once (and so its
//     default route out of the return path), with the BFD diagnostic as the
//     reason (the speaker sends "BFD down: <diagnostic>"). A peer
//     signalling AdminDown is not a failure (RFC 5882 section 3.2): nothing
//     is taken down.
//   - BFD Up brings the BGP session back (bgp.Speaker.PeerUp; with
//     --bgp-wait-for-bfd this is also what first starts it). Repeated
//     failures are damped: the n-th Up within DampingWindow of the previous
//     counted failures waits min(2^(n-2) s, MaxUpDelay) first, so a
//     flapping link cannot flap BGP. A router that gains BGP while its BFD
//     session is already Up (a static router changed into a BGP one) is
//     brought up the same way by that Apply, since no BFD event will come.
//   - A Down within EarlyDownGrace of the session's start (the later of
//     BFD Up and BGP established) is not counted for damping, at most once
//     per DampingWindow: FRR's bgpd re-registers its BFD session right after
//     BGP is established, which its peer sees as one Down. BGP is still
//     taken down for it; only the next recovery is not delayed.
//   - Each router has at most one pending bring-up: every BFD change of
//     that router cancels it (a new one is scheduled on Up), and so do
//     removing the router, switching its BFD off and Shutdown. A router
//     re-created, or whose BFD session is re-created, starts with no
//     damping history. Events of a removed session are ignored.
//   - A static gateway (GatewayRouter without BGP) is a return-path next hop
//     while its BFD session is Up, or always when it has no BFD.
//   - The return path's next hops are the BGP gateways advertising a default
//     route plus the static gateways that are up. Every change is handed to
//     the callback given to New (the reconcile loop).
//   - Apply is idempotent and diff-based, so the reconcile loop can call it
//     on every pass to retry what failed.
//   - The BFD server is the SLLBR's only one (one listener per BFD port):
//     other parts add their own sessions to BFD() (endpoint liveness) and
//     get their events through HandleOtherSessions. Apply touches only the
//     routers' sessions, and the events of other sessions never act on BGP
//     or the return path.
//
// bgp and bfd never import each other; this package is where they meet.
package uplink
