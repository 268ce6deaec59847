// Package fastpath compiles the desired dataplane state (the routes in
// precedence order and every Service's Maglev table of endpoint marks) into
// nftables objects (nft.FastPath) that decide most VIP packets in the
// kernel, without the round trip through nfqueue, and send exactly the same
// flows to the same endpoints as the userspace decision (package
// dataplane) does.
//
// # What the kernel decides and what it leaves to userspace
//
// The kernel decides an unfragmented TCP, UDP or SCTP packet, and an ICMP or
// ICMPv6 echo request or reply, to a VIP, when the VIP's IPv6 header has no
// extension header. It queues to userspace, as the nfqueue dataplane does:
//
//   - IPv4 fragments (offset or more-fragments set) and every IPv6 packet
//     with an extension header (a fragment header among them): userspace
//     keeps the first fragment's decision for the later ones;
//   - ICMP and ICMPv6 other than echo (errors are balanced on the flow they
//     quote; other types are dropped there);
//   - packets of other protocols, and packets no route matches (dropped
//     and counted as no_route there);
//   - packets whose route's Service has no ready endpoint of the packet's
//     family, or does not exist (dropped and counted as no_endpoint);
//   - packets the rules cannot read: a TCP, UDP or SCTP header shorter than
//     the ports, an echo shorter than 8 bytes (undecodable there);
//   - an IPv6 packet with an IPv4-mapped source address, to a VIP with a
//     route that restricts sources (userspace compares such a source with
//     the IPv4 source CIDRs);
//   - a packet that may match a route the rules cannot express, at that
//     route's place in the precedence order: a byte match at a transport
//     offset beyond Input.MaxPayloadOffset (older kernels read 255 bytes at
//     most).
//
// # The rules (table inet sllbrd)
//
// The prerouting chain (package nft) looks the destination up in the maps
// dispatch4/dispatch6 and jumps to the VIP's chain "v4-<vip>" (v6- for
// IPv6): one rule per protocol of its routes, matching IPv4 packets without
// fragment bits and IPv6 packets whose fixed header's next header is the
// protocol, "goto d4-<vip>-<proto>". That chain lists, in precedence order,
// one rule per route with that destination and protocol: its source CIDRs,
// source and destination ports and byte matches of that protocol, then
// "goto r4-<proto>-<route>" (for ICMP: only non-echo types return first, and
// routes match on source CIDRs only). The route chain loads the flow key
// (package flowkey) into consecutive registers, counts the packet in the
// route's counter object "r-<route>@<service>", sets the fwmark that
// "jhash <key> mod M seed maglev.FlowSeed" selects in the Service's entry
// map "m4-<service>-<M>" (M entries, entry -> the endpoint's mark; sized,
// so the kernel picks its fixed hash table for 4-byte keys), and goes to
// that mark's endpoint chain through the verdict map "em4-<service>-<S>"
// (one element per endpoint; S is nft.MarkMapSize of the endpoints, sized
// for the same reason). The endpoint chain "e4-<service>-<id>" counts in
// "e-<service>-<id>-<address>" and accepts; policy routing does the rest. A
// chain that gives no verdict returns to prerouting, whose next rule queues
// the packet: the kernel path never drops.
//
// The entry map holds marks, not verdicts, because of what a commit costs:
// nf_tables validates every jump and goto of the table, each element of
// every verdict map included, whenever a transaction adds one; with
// "goto" in the M entries, every endpoint change made the kernel walk all
// of them once per route chain that looks them up. An endpoint change now
// rewrites data entries only (the endpoint map changes when endpoints come
// and go), and the walk covers a few elements per endpoint.
//
// # Adoption
//
// An endpoint chain's rule comment names its Service, identifier and mark
// ("endpoint <service> <id> mark 0x10002 <address>"): AdoptedMarks reads
// them back, so that a restarted sllbrd gives every endpoint the mark the
// rules it left behind use.
package fastpath
