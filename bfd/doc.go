// Package bfd implements Bidirectional Forwarding Detection (RFC 5880) in
// asynchronous mode over UDP, single hop (RFC 5881) and multihop (RFC 5883),
// for IPv4 and IPv6. sllbrd uses it to supervise its gateway routers.
//
// The package is layered so that each layer can be tested on its own:
//
//   - packet.go: the wire codec. Packet.Unmarshal applies every reception
//     check of RFC 5880 section 6.8.6 that needs no session state and never
//     allocates; Packet.MarshalTo writes into a caller buffer.
//   - session.go, timers.go: Session, the per-peer state machine (RFC 5880
//     sections 6.2 and 6.8). It performs no I/O and reads no clock: every
//     method takes the current time, so tests drive it deterministically.
//   - socket*.go: RFC 5881/5883 transport (ports 3784/4784, TTL 255 on send,
//     TTL checked on receive through ancillary data, SO_BINDTODEVICE).
//   - server.go, run.go, transmit.go, txorder.go: Server, which owns the
//     sockets, demultiplexes received packets to sessions, runs the timers,
//     sends what the sessions have due and reports state changes.
//
// Promises:
//   - Authentication is not supported: packets with the A bit set are
//     discarded (DiscardAuthNotSupported) and we never set it.
//   - Demand mode and the Echo function are not supported: we never set the
//     D bit and always advertise a Required Min Echo RX Interval of zero.
//   - A peer that signals AdminDown moves the session to Down with diagnostic
//     NeighborSignaledDown, and the Event has PeerAdminDown set: per RFC 5882
//     section 3.2 that is not a path failure and consumers (BGP) must not
//     treat it as one.
//   - Server.Remove and Server.Shutdown take sessions AdminDown and keep
//     sending AdminDown packets at the session's rate until Detect Mult of
//     them have gone out (RFC 5880 section 6.8.16), so the peer hears it
//     even with some loss; a removed session's key is free at once.
//   - No socket is written while the Server's lock is held: packets are
//     marshalled under it and written after it is released, so a slow send
//     never stalls reception, statistics or configuration changes.
//   - The packets of one session reach its socket in the order they were
//     built, although the goroutine that runs the timers and those that
//     receive (answering a Poll or a state change at once) all write. A
//     packet superseded by a newer one of its session before it is written
//     may be dropped (each packet carries the session's whole state; Stats
//     counts them in PacketsSuperseded): so a stale Down never follows an
//     Up, which would take the peer Down (RFC 5880 section 6.8.6). No
//     goroutine waits for another's write: the one writing a session's
//     packet also writes the newest one built meanwhile, so a slow send
//     delays only its own session.
//   - Server.Run serves the timers (transmissions due, detection times
//     expired) in passes over every session, at most one pass per 2 ms
//     however many sessions and packets there are: a timer is served up to
//     2 ms late, and thousands of sessions cost a pass per 2 ms, not one per
//     deadline or received packet.
//   - All sockets are created by the goroutine that called Server.Run. To run
//     the server inside a network namespace, call Run from an OS thread locked
//     into that namespace.
//   - The package exposes plain counters (Stats); it has no metrics library
//     dependency.
package bfd
