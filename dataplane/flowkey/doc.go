// Package flowkey defines the flow key that both dataplane paths hash to
// pick a packet's entry in its Service's Maglev table: the kernel path
// (nftables rules built by package fastpath: payload loads into consecutive
// 32-bit registers, then "jhash ... mod M seed maglev.FlowSeed") and the
// userspace path (the decision engine, for fragments and ICMP errors).
//
// # Contract
//
//   - The key is the concatenation of Fields(proto, sctpPortsOnly), each
//     zero-padded to 4 bytes as nftables lays out registers (a payload load
//     of fewer than 4 bytes zeroes the rest of its last register:
//     nft_payload_eval in net/netfilter/nft_payload.c): source and
//     destination address (4 bytes each in IPv4, 16 in IPv6: adjacent in
//     the header, one load), source and destination port (4 bytes as in
//     the header: one load), protocol (1 byte). IPv4 TCP: 16 bytes, IPv6:
//     40 bytes; ports only: 8 bytes.
//   - ICMP and ICMPv6 echo (and an error quoting one) use the identifier
//     in place of both ports, padded to a register each (20 and 44 bytes);
//     an ICMP error hashes the flow it quotes, reversed (packet.Packet
//     already holds it so).
//   - SCTP of a Service that hashes SCTP on ports only uses Fields(true).
//   - Hash is maglev.JHash over the key with maglev.FlowSeed: the value the
//     kernel's jhash expression computes over the same registers, so that
//     maglev.Table.Lookup32 picks the entry the kernel's map lookup picks.
//     It allocates nothing.
//
// Changing the layout moves every flow: kernel rules and userspace must
// change together (they both read it from here).
package flowkey
