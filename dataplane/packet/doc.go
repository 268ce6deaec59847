// Package packet decodes raw IP packets, as nfqueue delivers them (starting
// at the IPv4 or IPv6 header, no link layer), into the few fields the load
// balancer decides on: the flow (addresses, protocol, ports), fragment
// identity and ICMP type.
//
// # Contract
//
// [Packet.Decode] fills a caller-owned [Packet], overwriting every field, so
// one Packet can be reused for every packet of a receive loop. Decode
//   - allocates nothing,
//   - never panics and never reads outside its input, whatever the input,
//   - does not copy: Packet.L4 aliases the input buffer, which must outlive
//     the use of L4,
//   - does not verify checksums (the kernel has verified the IPv4 header
//     before netfilter; transport checksums are the target's business).
//
// Lengths: an IPv4 total length or IPv6 payload length shorter than the
// buffer cuts the packet there; a longer one is taken to mean that the
// buffer was truncated (nfqueue's copy range), and the packet is decoded as
// far as its headers reach. An IPv6 payload length of zero (a jumbogram)
// trusts the buffer.
//
// Minimum lengths after the IP headers: 4 bytes for TCP, UDP and SCTP (the
// two ports; other header fields are not checked), 8 bytes for ICMP and
// ICMPv6. The packet embedded in an ICMP error must carry its whole IP
// header (options and extension headers included) and, for TCP, UDP, SCTP,
// ICMP and ICMPv6, 8 bytes of its transport header, as RFC 792 and RFC 4443
// guarantee. Less is ErrTruncated.
//
// IPv6 extension headers walked: hop-by-hop options (0), routing (43),
// fragment (44), authentication header (51) and destination options (60),
// at most [MaxExtensionHeaders] of them. Anything else ends the walk and is
// the packet's protocol: ESP (50) and no-next-header (59) are KindOther. An
// atomic fragment (fragment header with offset 0 and no more fragments,
// RFC 6946) is decoded as an unfragmented packet.
//
// # Kinds
//
//   - KindTransport: unfragmented TCP, UDP or SCTP; ports set, L4 is the
//     transport header.
//   - KindFirstFragment: offset 0 with more fragments to come; FragID is the
//     identification (16 bits in IPv4, 32 in IPv6), Src and Dst are the
//     packet's own. Ports as for an unfragmented packet of its protocol
//     (TCP/UDP/SCTP ports, ICMP echo identifier), zero otherwise; the
//     packet inside a fragmented ICMP error is not looked at.
//   - KindLaterFragment: offset > 0; FragID, Src, Dst and Proto (the
//     datagram's protocol as the IPv4 header or the IPv6 fragment header
//     names it) are set; no ports, L4 nil.
//   - KindICMPEcho: ICMP echo request/reply (types 8, 0) or ICMPv6 echo
//     request/reply (128, 129); SrcPort and DstPort both hold the identifier.
//   - KindICMPError: ICMP destination unreachable (3, all codes) or time
//     exceeded (11); ICMPv6 destination unreachable (1), packet too big (2)
//     or time exceeded (3). The embedded packet (same IP version) is decoded
//     and the flow fields describe it reversed: Src = embedded destination,
//     Dst = embedded source, SrcPort = embedded destination port, DstPort =
//     embedded source port, Proto = embedded protocol, L4 = embedded
//     transport bytes. An embedded ICMP echo gives its identifier as both
//     ports; an embedded protocol without ports gives zero ports. ICMPType
//     and ICMPCode are the outer message's.
//   - KindOther: anything else well-formed, including other ICMP types and
//     ICMP errors whose embedded packet is a later fragment or itself an
//     ICMP error (not followed: there is no recursion). Flow fields are the
//     packet's own, ports zero, L4 the bytes after the IP headers.
//   - KindInvalid: Err is one of the sentinel errors ([ErrTruncated],
//     [ErrBadVersion], [ErrBadHeaderLength], [ErrBadTotalLength],
//     [ErrTooManyExtensionHeaders], [ErrBadFragment]); the other fields hold
//     whatever was decoded before the error and serve diagnostics only.
package packet
