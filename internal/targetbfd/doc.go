// Package targetbfd is the target side of the BFD liveness probe
// (docs/target.md, "BFD"): in an application pod's network namespace it
// runs one bfd.Server whose sessions are, at all times, one single-hop
// session (RFC 5881, UDP 3784, TTL 255) per next hop of each Gateway whose
// desired configuration asks for liveness, so that each SLLBR, running the
// other end, finds the pod dead when its target side stops answering (a
// dead node, a broken network, or, with the sidecar, a frozen pod).
//
// It knows plain types, package bfd and internal/targetnet (to read the
// pod's interface addresses); kube/targetpod turns the pod annotation and
// the apply's targetnet.Result into Gateways, and kube/targetnode and
// `sllbrd target` run the Runners.
//
//   - Sessions (pure) computes the session set from Gateways: each next hop
//     that targetnet holds in a Gateway's table, on the interface targetnet
//     reports for its family, with DesiredMinTx = RequiredMinRx = the
//     Gateway's Interval and DetectMultiplier = its Multiplier; a next hop of
//     several Gateways gets one session with the strictest timing (shorter
//     Interval × Multiplier, then shorter Interval). The source address is
//     the pod's one address of that family on that interface within the
//     Gateway's subnets (the address the SLLBR probes); with none or several
//     the kernel chooses. A next hop whose family has no interface gets no
//     session and is counted (Stats.Unserved).
//   - Runner keeps one bfd.Server's sessions equal to that set: Set hands it
//     the Gateways (it never blocks), and Run adds, updates and removes only
//     what changed. A removed session goes AdminDown (the SLLBR hears that
//     the target side stops, RFC 5880 section 6.8.16); so does every session
//     when Run's context ends (bounded by ShutdownTimeout).
//   - Runner.Down is what the sessions say of the next hops (health, pure,
//     clock-driven): a next hop is down while its session is not Up once it
//     has been Up (the detection time expired, or the SLLBR took it down
//     with AdminDown: it is stopping), or when it has not come Up within
//     Multiplier × Interval + bfd.UpSlack of being added; it is up again at
//     its session's first Up, with no hold-down (the reply path keeps no
//     state: any SLLBR forwards any reply). DownChanged is signalled when
//     the set changes (coalesced), from session events and the start
//     graces' ends. The agent leaves those next hops out of the Gateways'
//     routes (targetnet.Gateway.Down) and hands them back in Set
//     (Gateway.Down): they keep their sessions. A server started again
//     keeps the down ones down until their new session is Up, and gives the
//     others a new grace.
//
// Promises:
//   - Only configured next hops have sessions: a BFD packet from any other
//     address is discarded by package bfd (no session: counted in
//     Stats.Discards), and a packet from a next hop arriving on another
//     interface does not match its session.
//   - All sockets live in the Runner's namespace: Run calls bfd.Server.Run
//     on an OS thread locked into it (setns), which goes back to its own
//     namespace before it is unlocked (or, if it cannot, stays locked and
//     ends with its goroutine): no thread returns to the pool in the pod's
//     namespace, and none stays there after Run (the Go runtime never ends
//     the main thread, so a locked main thread left there would keep the
//     namespace alive). That thread and the namespace's open file keep the
//     namespace alive while Run runs: the node daemon stops a Runner when
//     its pod goes or its namespace changes.
//   - A server that cannot start (setns fails) or stops on its own is
//     logged, counted (Counters: "server") and started again with backoff
//     (1 s doubling to 30 s) with every session; Run returns only when its
//     context ends. A session the server refuses is logged, counted
//     ("session") and tried again at the next Set.
//   - Every session state change is logged and counted (transitions up and
//     down); Stats gives the sessions by state for metrics. So is every
//     change of Down (logged with why), of the next hops left out of each
//     Gateway's routes (logged, Stats.LeftOut) and of the families whose
//     next hops are all down and all kept (logged, Stats.AllDown counts
//     each beginning). Counters may be
//     shared by the Runners of one process (the node daemon's pods), so
//     that its counters never go down when a Runner ends.
package targetbfd
