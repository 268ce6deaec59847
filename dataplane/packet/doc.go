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
// Lengths are read as the kernel's receive path reads them before netfilter
// queues the packet: an IPv4 total length or IPv6 payload length shorter
// than the buffer cuts the packet there; a longer one is taken to mean that
// the buffer was truncated (nfqueue's copy range), and the packet is decoded
// as far as its headers reach. A zero length field:
//   - IPv4 total length 0 is ErrBadTotalLength, except for TCP in
//     [Packet.DecodeGSO] (a GSO/GRO aggregate over 64 KiB, IPv4 BIG TCP):
//     the packet's own length counts, as in the kernel's iph_totlen;
//   - IPv6 payload length 0 with a hop-by-hop header is a jumbogram (RFC
//     2675): the Jumbo Payload option's length counts (a bad option is
//     ErrBadPayloadLength; without the option the buffer counts, as in the
//     kernel); without a hop-by-hop header it is a GSO aggregate's (BIG
//     TCP without the jumbo option) in DecodeGSO, whose own length counts,
//     and otherwise the packet has no payload (the kernel trims it to its
//     header).
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
//   - KindLaterFragment: offset > 0; FragID, Src, Dst and Proto (the IPv4
//     header's protocol, or the IPv6 fragment header's next header, which
//     may be an extension header of the fragmentable part such as AH or
//     Destination Options, so it need not equal the first fragment's
//     Proto) are set; no ports, L4 nil. A datagram is identified by
//     (Src, Dst, Proto, FragID) in IPv4 (RFC 791 section 3.2) and by (Src,
//     Dst, FragID) in IPv6 (RFC 8200 section 4.5).
//   - KindICMPEcho: ICMP echo request/reply (types 8, 0) or ICMPv6 echo
//     request/reply (128, 129); SrcPort and DstPort both hold the identifier.
//   - KindICMPError: ICMP destination unreachable (3, all codes), time
//     exceeded (11) or parameter problem (12); ICMPv6 destination
//     unreachable (1), packet too big (2), time exceeded (3) or parameter
//     problem (4). The embedded packet (same IP version) is decoded
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
//     [ErrBadPayloadLength], [ErrTooManyExtensionHeaders],
//     [ErrBadFragment]); the other fields hold whatever was decoded before
//     the error and serve diagnostics only.
//
// [Packet.IsEcho] tells an echo apart whether it is whole or the first
// fragment of a larger one.
package packet
