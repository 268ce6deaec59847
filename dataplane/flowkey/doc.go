// Package flowkey defines the flow key that both dataplane paths hash to
// pick a packet's entry in its Service's Maglev table: the kernel path
// (nftables rules built by package fastpath: payload loads into consecutive
// 32-bit registers, then "jhash ... mod M seed maglev.FlowSeed") and the
// userspace path (the decision engine, for fragments and ICMP errors).
//
// # Contract
//
//   - The key is the concatenation of Fields(portsOnly), each zero-padded to
//     4 bytes as nftables lays out registers (a payload load of fewer than 4
//     bytes zeroes the rest of its last register: nft_payload_eval in
//     net/netfilter/nft_payload.c): source address, destination address (4
//     bytes in IPv4, 16 in IPv6), source port, destination port (2 bytes
//     each, network order), protocol (1 byte). IPv4 TCP: 20 bytes, IPv6:
//     44 bytes; ports only: 12 bytes.
//   - ICMP echo uses its identifier as both ports; an ICMP error hashes the
//     flow it quotes, reversed (packet.Packet already holds it so).
//   - SCTP of a Service that hashes SCTP on ports only uses Fields(true).
//   - Hash is maglev.JHash over the key with maglev.FlowSeed: the value the
//     kernel's jhash expression computes over the same registers, so that
//     maglev.Table.Lookup32 picks the entry the kernel's map lookup picks.
//     It allocates nothing.
//
// Changing the layout moves every flow: kernel rules and userspace must
// change together (they both read it from here).
package flowkey
