// Package route programs sllbrd's policy routing: where marked packets go
// (one routing table per endpoint) and how VIP-sourced traffic leaves (a
// return-path table per group of gateways).
//
// A Reconciler makes the kernel match a desired set, given as
// []EndpointRoute and []ReturnPath, every time Reconcile is called:
//
//   - per EndpointRoute: "ip rule fwmark MARK/0xffffffff lookup TABLE" at
//     priority Ranges.Priorities.Min, in the family of Via, and
//     "default via VIA dev INTERFACE" (metric GatewayMetric) in TABLE, plus
//     a "blackhole default" (metric BlackholeMetric): a marked packet whose
//     endpoint route is missing (e.g. the kernel removed it when the link
//     went down) is dropped, never routed by the main table;
//   - per ReturnPath and VIP: "ip rule from VIP lookup TABLE" at priority
//     Ranges.Priorities.Min+1 (after the fwmark rules, so a marked packet
//     from a VIP to a VIP still follows its mark); TABLE holds, per family
//     that has a VIP, a default route over the gateways of that family (one
//     next hop, or ECMP multipath when several) with metric GatewayMetric,
//     and always a "blackhole default" with metric BlackholeMetric, so that
//     VIP-sourced traffic is dropped, never routed by the main table, when
//     no gateway is up.
//
// Ownership. Only objects in our ranges are ever changed: a rule is ours
// when its priority is in Ranges.Priorities and its table in Ranges.Tables;
// a route is ours when its table is in Ranges.Tables. Ours but not desired
// is deleted (on the first call this removes what a previous run left);
// everything else is never touched. Marks and tables given by the caller
// must lie in Ranges.Marks and Ranges.Tables; DefaultRanges uses marks and
// tables 10000-19999 and rule priorities 10000-10099 (before the main
// table's rule at 32766, after the local table's at 0).
//
// When an endpoint table's gateway changes (a new IP for the same mark),
// the neighbour entry of the old IP on the old interface is flushed.
//
// Reconcile is idempotent. Routes are written before rules and rules are
// deleted before routes, so a rule never points at a table being emptied.
// A failing object does not stop the others: every error is reported,
// wrapped with the object that failed, in one joined error.
//
// The kernel is reached through the Kernel interface; NewNetlinkKernel
// implements it with rtnetlink (optionally in another network namespace).
package route
