// Package bgp embeds a GoBGP (v3) speaker that advertises the load
// balancer's VIPs to the data-centre gateways and learns their default
// routes.
//
// What it does:
//
//   - Speaker.Apply turns the BGP GatewayRouters of the model into GoBGP
//     peers, one per router address, diffed by address: a change to one
//     router deletes and re-adds only that peer; other sessions are untouched.
//     Routers without BGP (static gateways) are ignored.
//   - Speaker.Announce advertises a set of VIPs as /32 and /128 host routes
//     with an unspecified next hop, which GoBGP rewrites to the session's
//     local address ("next hop self") for eBGP and iBGP alike. Each session
//     negotiates only the address family of its neighbour address, so IPv4
//     VIPs go to IPv4 neighbours and IPv6 VIPs to IPv6 neighbours; an IPv6
//     VIP is never sent over an IPv4 session (its next hop would be an IPv4
//     address the gateway cannot use). Dual-stack needs one GatewayRouter
//     per family, as in Meridio.
//   - Import policy: only default routes (0.0.0.0/0, ::/0) from peers enter
//     the RIB; export policy: only locally originated host routes (our VIPs)
//     leave it, so a default learned from one gateway is never re-advertised.
//     (GoBGP still keeps each peer's pre-policy Adj-RIB-In.)
//   - Speaker.GatewayUpdates delivers, whenever it changes, the set of
//     gateways (router, peer address, advertised next hop, interface) that
//     currently provide a default route, per family.
//   - PeerDown/PeerUp couple BFD to BGP: PeerDown removes the peer's
//     gateways from the published set before returning and disables the
//     session at once; PeerUp re-creates the peer so it dials again within
//     1-2 s (GoBGP's EnablePeer would wait a fixed 5 s idle-hold first).
//     With WithWaitForBFD, peers with BFD enabled start disabled until
//     PeerUp. The hold follows the configuration: a router whose BFD is
//     switched off is no longer held, and a router deleted and created
//     again starts afresh (waiting for BFD again with WithWaitForBFD).
//   - The NOTIFICATION sent on BFD down is Cease / Administrative Shutdown
//     (subcode 2) with the RFC 9003 communication "BFD down: <reason>".
//     RFC 9384 defines the Cease subcode "BFD Down" (10) for this, but GoBGP
//     v3.37.0 cannot send it: its only ways to close a session with a
//     NOTIFICATION of the caller's choosing are DisablePeer and
//     ShutdownPeer (subcode 2), ResetPeer (4, and the peer restarts at
//     once), DeletePeer (3) and UpdatePeer (2, 3 or 6); the subcode is
//     fixed inside its FSM. Subcode 2 with the communication is what tells
//     the gateway most precisely why.
//   - Session protection per router: the TCP MD5 password (RFC 2385,
//     GoBGP's AuthPassword; never with a link-local neighbour, which GoBGP
//     v3.37.0 cannot key) and GTSM (RFC 5082: TTL 255 sent, IP_MINTTL /
//     IPV6_MINHOPCOUNT 256-hops required). Both are session parameters: a
//     change re-creates that peer.
//   - Path attributes per router: its communities, large communities and
//     local preference are added to the VIPs sent to it by a per-peer
//     export policy (a neighbour set and a statement without route action,
//     assigned before sllbrd-export). A change replaces that policy only and
//     re-advertises to that peer (soft reset out), without a session reset;
//     a failed step is retried by the next Apply.
//   - Shutdown withdraws every VIP, waits the drain time, then stops GoBGP.
//   - OnDemand wraps a Speaker that runs only while some router has BGP.
//
// Transport: the speaker dials out and does not listen unless WithListenPort
// is given. A router's LocalPort is used as the source port of the outgoing
// TCP connection (GoBGP transport local-port), its RemotePort as the
// destination port, and its Interface is bound with SO_BINDTODEVICE (GoBGP
// transport bind-interface). See README.md in this directory for the
// TIME_WAIT caveat of a fixed source port.
//
// Router id: WithRouterID, else DeriveRouterID over the host's interface
// addresses and host name (works on IPv6-only pods).
//
// Promises: methods are safe for concurrent use; the package never imports
// bfd, dataplane, kube or k8s.io.
package bgp
