// Package nft programs sllbrd's own nftables table, which steers traffic for
// the virtual IPs (VIPs) into the nfqueue(s) read by the load balancer.
//
// Scope: the package creates, updates and deletes exactly one table (by
// default "inet sllbrd") and never reads or writes any other table.
//
// The table (built in ruleset.go; TestIntegration* logs a dump):
//
//   - sets "vips4" (ipv4_addr) and "vips6" (ipv6_addr) holding the VIPs;
//   - chain "prerouting" (filter, hook prerouting, priority raw = -300):
//     "ip daddr @vips4 queue" and "ip6 daddr @vips6 queue"; with a kernel
//     path (Config.Kernel, built by package fastpath) first "ip daddr vmap
//     @dispatch4" (and "ip6 daddr vmap @dispatch6") jumping to the fast
//     path's chain of the VIP: a packet they give no verdict comes back and
//     is queued by the next rule;
//   - with a kernel path, its maps "dispatch4"/"dispatch6" (sized powers of
//     two, so IPv4's is a fixed hash table of 4-byte keys), and its regular
//     chains, named sets, data and verdict maps, and counter objects;
//   - chain "output" (filter, hook output, priority raw): ICMP errors the
//     node itself generates towards a VIP (ICMP destination-unreachable and
//     time-exceeded; ICMPv6 types 1, 2, 3) are queued as well, so the load
//     balancer forwards them to the target that owns the flow;
//   - chain "pmtu" (route, hook output, priority raw): an ICMP
//     fragmentation-needed (ICMPv6 packet-too-big) that the node generates
//     for a forwarded VIP flow gets the VIP as source and mark 0, so it is
//     routed back to the client over the VIP return path (see below).
//
// Queue rules never carry the bypass flag: the table fails closed. Without a
// reader on the queue(s), VIP traffic is dropped; it is never routed by the
// main routing table.
//
// Queue statement. Two encodings exist: the native nftables "queue"
// expression (CONFIG_NFT_QUEUE) and the xtables NFQUEUE target (revision 3)
// through nft_compat. New probes the kernel once, in a transaction that
// creates and deletes a scratch table (so nothing remains), and uses the
// native expression when the kernel accepts it, the compat target otherwise;
// Mode reports the choice. Both give the same behaviour: queues First ..
// First+Count-1, balanced by the kernel on (saddr, daddr, protocol), or by
// CPU when Fanout is set.
//
// Priority. The chains hook at raw (-300), the earliest priority at which the
// compat NFQUEUE target is accepted for prerouting. It runs before conntrack
// (-200), so VIP traffic creates no conntrack entries. IPv4/IPv6
// defragmentation (-400) runs before it only when conntrack is loaded in the
// namespace; otherwise fragments reach the queue as they are and the
// dataplane's fragment handling applies.
//
// PMTU (the "pmtu" chain). When a packet the LB forwards to a target is too
// big for the target-facing link, the kernel answers the client with ICMP
// fragmentation-needed / packet-too-big, sourced from one of the node's own
// addresses. With the sysctls net.ipv4.fwmark_reflect=1 and
// net.ipv6.fwmark_reflect=1 (package sysctl) that reply carries the mark of
// the offending packet, i.e. a target mark, which would route it to the
// target. The rule matches such replies (mark != 0, neither address a VIP,
// the embedded packet's destination in the VIP set), rewrites the source to
// the embedded destination (the VIP), fixes the checksum (IPv4 header
// checksum; for IPv6 the ICMPv6 checksum, whose pseudo-header covers the
// source) and sets mark 0; the route chain then re-routes the packet, which
// now follows "from VIP" policy routing to the gateways. The idea follows
// Nordix/Meridio's stateless-lb "snat-local" chain. Limits: the embedded
// header is read at a fixed offset, so it assumes an IPv4 inner header
// without options and an ICMPv6 error without extension headers before it
// (both hold for errors the kernel generates itself for forwarded packets);
// without fwmark_reflect the rule never matches and the reply leaves with
// the node's address.
//
// Transactions. Program makes the kernel match a Config in ONE nftables
// transaction (one netlink batch): no packet ever sees half a change. It
// compares the wanted table with the table as it is: the state it
// committed last while the ruleset generation is still the one it
// committed (nobody else changed any table), or else the table read back
// from the kernel (at start: what a previous run left, which is adopted,
// not flushed). When the base chains (the hooked ones, with their rules,
// each carrying a comment that names the layout version and queue
// settings) or the base sets differ, the table is deleted and rebuilt
// inside the same transaction. Otherwise only what differs is written:
// set elements (an entry map's entries that map to another mark are
// deleted and added again; interval sets are refilled), chains whose rules differ
// (flushed and refilled; a fast path rule's comment carries a digest of
// its expressions), and new or removed sets, chains and counters, in an
// order the kernel accepts (references resolve when added; nothing is
// deleted while referenced). Programming the same Config twice writes
// nothing; restarts are idempotent. When queueing a transaction fails
// part-way, what was queued is discarded uncommitted (discard.go): the
// next transaction on the connection holds only its own operations. When nothing but entries of entry
// maps differs (an endpoint became ready or not ready) and the Programmer
// has an EntryConn (WithEntryConn), that transaction is encoded by this
// package into one buffer and sent in one datagram (entries.go: the wire
// format; NetlinkEntryConn), with the same generation check; everything
// else goes through google/nftables. Cleanup deletes the table. Chains
// returns the table's chains and rule comments (what a previous run left);
// ReadCounters reads the counter objects (on a connection of its own: a
// Programmer is not safe for concurrent use). ProbeKernelPath checks that
// the kernel accepts what a fast path uses (jhash, data and verdict maps,
// counter objects) and how far a payload expression may read.
//
// Give New a lasting google/nftables connection (nftables.AsLasting), as
// sllbrd does, and keep ReadCounters' open too: releasing a netfilter
// netlink socket after a commit makes the kernel wait for an RCU grace
// period under the nftables commit mutex (nft_rcv_nl_event), which delays
// the next transaction by 5-20 ms. NetlinkEntryConn keeps its socket for
// the same reason.
package nft
