// Package classify finds the L34Route a packet belongs to.
//
// Compile turns a []model.Route into an immutable *Table; Lookup maps a
// decoded *packet.Packet to the index of the winning route in that table.
// Lookup allocates nothing and its cost does not grow with the number of
// routes except for routes that overlap on the packet's own destination
// address, protocol and destination port (see "Cost" below).
//
// # Validation
//
// Compile checks every route and skips an invalid one with a *RouteError
// naming the route, the field (in L34Route spelling) and the offending value,
// e.g.
//
//	l34route "ns/r1": destinationCIDRs[1] "10.0.0.0/24": must be a single address
//
// One bad route never disables the good ones. Addresses are stored unmapped:
// an IPv4-mapped IPv6 destination ::ffff:a.b.c.d/128 is the IPv4 VIP
// a.b.c.d/32, and an IPv4-mapped source prefix of length >= 96 is the
// corresponding IPv4 prefix. Every destination of a route with source CIDRs
// needs at least one source CIDR of its own family.
//
// # Matching
//
// A TCP, UDP or SCTP packet (unfragmented, a first fragment, or the flow of an
// ICMP error, which the decoder has already reversed) matches a route when
//   - its destination address is one of destinationCIDRs,
//   - its source address is within one of sourceCIDRs (none: any),
//   - its protocol is one of protocols,
//   - its source and destination ports are within one of sourcePorts and
//     destinationPorts (none, or "any": any port), and
//   - every byteMatch of the packet's protocol holds: Size bytes read
//     big-endian at Offset from the start of the transport header, masked
//     with Mask, equal Value. A byteMatch of another protocol does not apply
//     to the packet (as in NFQLB, so that one route can carry tcp[...] and
//     udp[...] statements); if the packet's L4 bytes end before
//     Offset+Size the statement fails (this includes ICMP errors quoting
//     too little of the original packet).
//
// ICMP and ICMPv6 echo (packet.KindICMPEcho, and the first fragment of an
// echo too big for the path: packet.Packet.IsEcho) match a route on the
// destination and source addresses only: protocols, ports and byteMatches do
// not apply, so a ping to a VIP reaches a target of the highest-precedence
// route whose sourceCIDRs admit the pinger.
//
// Later fragments, undecodable packets and other protocols never match; the
// fragment tracker reuses the first fragment's decision.
//
// # Precedence
//
// Among matching routes the highest priority wins. Equal priorities are
// broken by the route name (namespace/name) in lexical byte order, the
// smaller name winning; names are unique in a table (a duplicate is
// rejected). The order is therefore the same on every instance and after
// every restart, whatever order the routes were listed in. Table indexes
// follow this precedence: index 0 is the route that wins over all others.
//
// # Cost
//
// Lookup hashes (destination address, protocol) into a flat open-addressing
// table, binary-searches the disjoint destination-port intervals of that key
// (laid out with their route lists in one contiguous block), and walks the
// routes of the interval in precedence order. A route without source CIDRs,
// source ports or byte matches for the key's protocol is marked in the block
// and wins without further reads; others check source CIDRs, source ports
// and byte matches until one holds. So the cost depends only on the routes
// overlapping the packet's own address, protocol and port.
//
// The worst case is many routes overlapping on one address, protocol and
// port that differ only in source CIDRs, source ports or byte matches: they
// are checked one by one, like NFQLB does for all routes. Memory is
// proportional to the sum over intervals of their route lists; if one key's
// lists would exceed maxIntervalEntries references (heavily nested port
// ranges), that key falls back to a single interval whose routes also check
// the destination port: bounded memory, a linear scan for that key only.
package classify
