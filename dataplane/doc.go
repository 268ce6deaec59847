// Package dataplane decides, for every packet nfqueue hands it, where the
// packet goes: decode (packet), classify against the L34Routes (classify),
// pick the Service's endpoint with Maglev (maglev), keep later fragments with
// their first fragment (fragment), and return the verdict with the chosen
// endpoint's fwmark. The kernel adapters live in subpackages: nfqueue (the
// receive/verdict loop), nft (rules), route (policy routing), sysctl.
//
// # Contract
//
//   - Engine.Decide (DecideMeta with what nfqueue tells of the packet) is
//     the hot path. It allocates nothing, never blocks (fragments take a
//     striped mutex, nothing else locks), never panics on any input, and
//     reads one immutable snapshot through an atomic pointer. Every call
//     ends in exactly one Reason, counted.
//   - Per-packet counters (reasons, decode errors, routes, endpoints) are
//     sharded: each Decision writes its own cache-line-padded shard (one
//     per CPU, up to 64), scrapes sum the shards. Give each concurrent
//     reader its own Decision.
//   - The counters of routes and endpoints the committed configuration no
//     longer has are deleted one grace period (as for marks) after the commit
//     that removed them (a fragment table entry names them by id for one
//     lifetime); until then their ids are not given to other label sets.
//   - Engine.Build turns a model.State into a Plan off the hot path: the
//     compiled routes, one Maglev table per Service, and the fwmark of every
//     endpoint. Invalid routes or endpoints are left out and reported in
//     Plan.Problems; they never disable the valid ones. Engine.Commit
//     publishes a Plan with one atomic store. Callers program the kernel
//     routes of Plan.Endpoints before Commit, so no packet is ever marked for
//     a route that does not exist yet.
//   - Fwmarks are stable: an endpoint slot (Service, identifier) keeps its
//     mark across reloads for as long as it exists. Endpoint marks lie in
//     one aligned block (default 0x10000/0xffff0000, WithMarks; an
//     endpoint's routing table number equals its mark). The mark of a slot
//     that leaves the configuration stays held: it is never given to another
//     slot until Programmer has deleted its routes, and the slot takes it
//     back if it returns before.
//   - Programmer.Apply never lets a marked packet be routed by the main
//     table. The route package keeps one catch-all rule "fwmark
//     0x10000/0xffff0000 blackhole" after the per-mark rules, installed
//     before anything is queued and kept for the process's life, so a mark
//     without its rule is dropped. Apply runs in two phases: add the new
//     rules and routes (with those of removed endpoints still in their grace
//     period), commit the plan, program the queue rules, then delete what is
//     no longer wanted and release the marks of deleted routes. A removed
//     endpoint's routes are kept for the grace period after the commit
//     without it: the fragment lifetime plus VerdictMargin (3 s by default),
//     covering later fragments that reuse a remembered mark and verdicts of
//     packets decided on the previous snapshot. Applied.RetireAt says when
//     Apply must run again to delete them (sllbrd's reconcile loop schedules
//     it). After a restart, routes left by the previous run are deleted by
//     the first Apply, once its own routes are added and its plan committed.
//   - Before the first Commit every packet is dropped (ReasonNotConfigured).
//   - With WithKernelPath, Apply also programs the kernel path (package
//     fastpath compiles the plan being committed: same routes, tables,
//     marks and flow hash) in the same nftables transaction as the VIP
//     sets; when that fails, stale routes are not pruned nor their marks
//     released. Adopt, before the first Apply, gives every endpoint slot the
//     mark the kernel path left by a previous run uses (adopted marks start
//     held: kept by a slot that is configured, released otherwise), so a
//     restart changes nothing that still holds. KernelStats adds the kernel
//     path's counter objects to the route, endpoint and balanced counters.
//   - Engine.Explain decides a synthetic packet (a Probe) with the same
//     decision function as Decide (choose: route lookup, flow hash, Maglev
//     slot) and reports each step, without counting it or touching the
//     fragment table. Engine.Inspect and InspectFragments read the
//     committed snapshot and the counters. All three are for operators
//     (sllbrd show, sllbrd explain), off the packet path.
//
// # Flow keys
//
// TCP, UDP and ICMP echo are hashed on (source, destination, source port,
// destination port, protocol); echo uses its identifier as both ports. SCTP
// is hashed on the ports and protocol only by default (a multihomed
// association reaches the same target from any of its addresses); a Service
// with SCTPHashPorts false hashes SCTP like TCP. ICMP errors are hashed on the
// flow they quote, reversed, so they reach the endpoint that owns the flow.
// The hash is flowkey.Hash: the kernel's jhash over the key laid out as
// nftables registers, with maglev.FlowSeed, and the entry is
// maglev.Table.Lookup32 (the kernel's reciprocal_scale), so every instance
// agrees, and the kernel path (package fastpath) picks the same endpoint.
//
// # Fragments
//
// The first fragment of a datagram is balanced like any packet and its
// decision remembered for a short time under the datagram's identity:
// (source, destination, protocol, fragment id) for IPv4 (RFC 791), (source,
// destination, fragment id) for IPv6 (RFC 8200 section 4.5; the fragment
// header's next header may be AH or Destination Options). The first
// fragment of an ICMP echo follows the echo rule. Later fragments follow
// it. A later fragment that arrives before its first fragment is held
// (Verdict Hold: the caller keeps it queued in the kernel without a
// verdict) and released with the first fragment's verdict when that
// arrives, or dropped by Expire when it does not arrive in time (the
// fragment table's lifetime, 2 s by default). At most fragment.MaxHeld
// fragments per datagram are held; more are dropped and counted
// (ReasonFragmentUnknown). Serve holds at most HoldLimit packets per queue
// (a quarter of its length) so held fragments never fill a kernel queue;
// beyond that they are dropped (ReasonFragmentHoldLimit).
//
// # Lengths
//
// A packet nfqueue flags as a GSO aggregate (NFQA_SKB_GSO) is decoded with
// packet.DecodeGSO: BIG TCP aggregates over 64 KiB state IP length 0.
package dataplane
