// Package route programs sllbrd's policy routing: where marked packets go
// (one routing table per endpoint) and how VIP-sourced traffic leaves (a
// return-path table per group of gateways).
//
// The desired set is given as []EndpointRoute and []ReturnPath:
//
//   - always, per family: the catch-all "ip rule fwmark VALUE/MASK
//     blackhole" (Ranges.Marks, an aligned block of marks) at priority
//     Ranges.Priorities.Min+1, after the fwmark rules: a packet carrying a
//     mark of the block that has no rule of its own is dropped, never routed
//     by the main table;
//   - always, per family: the skip rule "ip rule not fwmark VALUE/MASK goto
//     Min+2" at priority Ranges.Priorities.Min-1, just before the fwmark
//     rules. It changes no packet's route: a packet without a mark of the
//     block can match neither an exact-mark rule of the block nor the
//     catch-all, so it continues at Min+2 whether it walks them or not. It
//     spares every such packet (replies from targets, the SLLBR's own
//     traffic: probes, BGP, BFD, and their replies, each route lookup and
//     source validation) the walk over one rule per endpoint, a cost that
//     grows with the endpoints (figures in docs/performance.md). While no rule has priority Min+2 (no return
//     path) the kernel leaves the goto unresolved and skips it, as if it
//     were absent (6.18: such packets walk on to the main table); it is
//     resolved as soon as a rule at Min+2 is added, and unresolved again
//     when the last goes. Rules other programs put at Min..Min+1 are
//     skipped by packets outside the block too: those priorities are ours;
//   - per EndpointRoute: "ip rule fwmark MARK lookup TABLE" (exact mark) at
//     priority Ranges.Priorities.Min, in the family of Via, and
//     "default via VIA dev INTERFACE" (metric GatewayMetric) in TABLE, plus
//     a "blackhole default" (metric BlackholeMetric): a marked packet whose
//     endpoint route is missing (e.g. the kernel removed it when the link
//     went down) is dropped, never routed by the main table;
//   - per ReturnPath and VIP: "ip rule from VIP lookup TABLE" at priority
//     Ranges.Priorities.Min+2 (after the fwmark rules and the catch-all, so a
//     marked packet from a VIP to a VIP still follows its mark); TABLE holds,
//     per family that has a VIP, a default route over the gateways of that
//     family (one next hop, or ECMP multipath when several) with metric
//     GatewayMetric, and always a "blackhole default" with metric
//     BlackholeMetric, so that VIP-sourced traffic is dropped, never routed
//     by the main table, when no gateway is up.
//
// Two phases. Add installs the catch-all first, then the skip rules,
// then creates or replaces the desired routes and adds the desired rules;
// it deletes nothing. Prune deletes our rules, then our routes, that the
// desired set does not hold; it keeps the catch-all and the skip rules. A caller that switches packets to a new set of
// marks calls Add, switches (commits its snapshot), and calls Prune only for
// marks no packet can carry any more: dataplane.Programmer keeps a removed
// endpoint's route in the desired set for a grace period first. A mark
// that is given a new gateway has its route replaced in place, and the
// neighbour entry of the old gateway on the old interface is flushed.
// Cleanup deletes all of ours, the catch-all last. Add wraps
// ErrNoCatchAll when the catch-all could not be confirmed in place: the
// caller must then queue nothing new (a missing skip rule is reported,
// not as ErrNoCatchAll: without it packets are routed the same, slower).
//
// No window without a route. A changed route (an endpoint's new gateway,
// a return path's new set of gateways: one to several, several to others,
// several to one) is written in one RTM_NEWROUTE with NLM_F_REPLACE that
// carries every next hop, in both families; it is never deleted and
// re-added. While it changes, a lookup in the table finds a route through
// a gateway (the old one or the new one), never no route, never the
// blackhole below it. IPv6 keeps one kernel route per next hop and the
// kernel inserts a new set one hop at a time, the first replacing the old
// set whole: for that instant a lookup may find only the first hops of the
// new set (see NetlinkKernel.ReplaceRoute). Only a failing IPv6 change
// (the kernel refuses a later hop of the set) leaves the key without a
// route: the kernel takes back the hops it inserted, the blackhole drops,
// Add returns the error and the next Add writes the set again.
//
// Ownership. Only objects in our ranges are ever changed: a rule is ours
// when its priority is in Ranges.Priorities and it either looks up a table
// in Ranges.Tables or is a blackhole rule, or when it is at the skip
// rule's priority (Min-1), selects a fwmark (inverted or not) and nothing
// else, and goes to a priority in Ranges.Priorities; a route is ours when
// its table is in Ranges.Tables. Ours but not desired is deleted by Prune
// (on the first Prune of a process this removes what a previous run left);
// everything else is never touched. A skip rule left behind by a run
// whose Reconciler does not own that priority (a downgrade to a version
// without it) is harmless: the rules it skips only match marked packets of
// the block, which it does not skip, so every packet is routed as without
// it. The kernel tells rules apart, when it deletes one or refuses one as
// existing, by fewer attributes than a Rule has (not by a goto's target
// nor by "not"): another goto in the skip rule's place makes Add report
// the skip rule refused; Prune deletes the other and the next Add adds it.
// Marks and tables given by the caller must lie in Ranges.Marks and
// Ranges.Tables. DefaultRanges: the mark block 0x10000/0xffff0000 (marks
// 65536-131071), tables 65536-131071 and rule priorities 10000-10099, and
// 9999 for the skip rule (before the main table's rule at 32766, after the
// local table's at 0).
//
// Add and Prune are idempotent. Rules are deleted before routes, so a rule
// never points at a table being emptied. A failing object does not stop the
// others: every error is reported, wrapped with the object that failed, in
// one joined error.
//
// Listing. Add and Prune decide from our rules and routes as the kernel
// lists them. Over a Kernel that is also a ChangeWatcher (NetlinkKernel:
// a second rtnetlink socket subscribed to the rule, route, link, address
// and next-hop notifications), they list only when something other than
// the Reconciler's own requests may have changed them since the last
// listing: a notification sent for another socket or by the kernel
// itself (the kernel flushes a link's IPv4 routes without a route
// notification, after the link's), lost notifications, or a failed
// change of ours. Otherwise they work from the last listing updated by
// their own successful changes, which is the kernel's state: an Add and
// Prune that change nothing make no listing, and whatever anyone else
// changed before an Add is seen and repaired by it, as with a listing
// every time. The last listing is not used when a deletion of ours could
// act on another object than the one it names (one of our rules or
// routes listed twice or two rules the kernel's deletion cannot tell
// apart, a foreign rule at our priorities or the skip rule's): then every
// Add and Prune lists. Nor is a listing older than DefaultMaxListingAge
// (WithMaxListingAge), shorter than the daemon's resync: every resync
// still compares with the kernel itself, so a difference that no
// notification showed (a kernel behaviour the bookkeeping does not model)
// lasts at most until the next resync.
//
// The kernel is reached through the Kernel interface; NewNetlinkKernel
// implements it with rtnetlink (optionally in another network namespace).
package route
