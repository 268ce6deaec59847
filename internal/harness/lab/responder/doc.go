// Package responder is the lab's target-side server: it answers every UDP
// datagram and every TCP connection on the configured VIPs and ports with one
// reply line naming the target and the client's address and port as seen by
// the target, so a client learns which target served each flow and that no
// address translation happened on the way.
//
// Promises: one reply per datagram; one reply per TCP connection, after which
// the server half-closes and waits (bounded) for the client to close, so the
// client may close with RST and no TIME_WAIT remains for repeated flows with
// fixed source ports. Every socket is bound to a VIP (never a wildcard), so
// replies leave with the VIP as source address.
//
// The VIPs need not be local when the responder starts: its sockets bind
// with IP_FREEBIND / IPV6_FREEBIND (no capability, no sysctl), so in a pod
// it starts before `sllbrd target` puts the VIPs on lo and answers once
// they are there. A mistyped address is therefore not refused by the bind:
// it is never answered on.
package responder
