// Package bpfpath is sllbrd's eBPF datapath (`--dataplane bpf`): a tc
// (tcx) ingress program and an XDP program, two front ends of one
// decision written in C (bpf/), compiled by clang through bpf2go into the
// committed objects ingress_bpfel.o and ingress_bpfeb.o, loaded together
// (sharing every map) with github.com/cilium/ebpf. The decision is the one
// the other paths make (the VIP's route, the endpoint its Service's Maglev
// table gives the flow). The tc program reports it and acts on it: it sets
// the endpoint's fwmark, counts, and forwards the packet itself to the
// endpoint's next hop when it has one (SetNextHops). The XDP program, where
// attached (AttachXDP), forwards before the skb what it can forward whole
// and passes the rest to the tc program. Attach and AttachXDP put them on
// an interface. docs/bpf.md says what they need and how they are built.
//
// # Contract
//
//   - The program makes the userspace path's decision bit for bit: for
//     every packet it decides, the route is the one classify.Table.Lookup
//     picks (Result.Route, its index in precedence order), the hash is
//     flowkey.Hash of the packet as package dataplane/packet decodes its IP
//     bytes (the key laid out as nftables registers, the kernel's jhash,
//     seed maglev.FlowSeed), the entry is maglev.ReciprocalScale(hash, M),
//     the slot is maglev.Table.Lookup32(hash) of the route's Service's table
//     of the packet's family, and the mark is that endpoint's fwmark, as
//     the kernel path (package dataplane/fastpath) sets it. Differential
//     tests in package dataplane (TestIntegrationBPFPathMatchesEngine) check
//     this through BPF_PROG_TEST_RUN on the running kernel against the
//     engine and a model of the kernel path.
//   - Configure programs it from fastpath.Input, the input the kernel path
//     compiles: per VIP its routes in precedence order (protocols, source
//     CIDRs, source and destination port ranges), per Service and family
//     its table of endpoint marks (M entries) and the SCTP-ports-only
//     flag. A VIP's route set and a Service's table are each replaced whole
//     by one map update (map-in-map): a packet sees the old or the new one.
//   - It decides Ethernet frames carrying unfragmented IPv4 (any header
//     length) or IPv6 without extension headers with TCP, UDP, SCTP, ICMP
//     echo (in IPv4) or ICMPv6 echo (in IPv6), whose IP length fits the
//     frame, to a VIP: exactly the packets the decoder calls KindTransport
//     or KindICMPEcho, less those below. Everything else it punts, with a
//     Status saying why, and never returns a wrong answer: non-IP Ethernet
//     types and VLAN tags (StatusPuntNotIP); fragments
//     (StatusPuntFragment); IPv6 extension headers
//     (StatusPuntIPv6Extension); ICMP errors (StatusPuntICMPError); other
//     protocols and ICMP types (StatusPuntProtocol); malformed headers
//     (StatusPuntMalformed), which include two the decoder would still
//     decode but the kernel's IP receive path drops: an IP version unlike
//     the Ethernet type, and an IPv4 total length or IPv6 payload length
//     beyond the frame (the decoder reads that as nfqueue's copy range
//     cutting the packet; at tc ingress the frame is whole).
//   - Of the packets to a VIP, it punts those the kernel path hands to
//     userspace: no route matches (StatusPuntNoRoute, userspace's
//     no_route); the route's Service does not exist or has no ready
//     endpoint of the packet's family (StatusPuntNoEndpoint, no_endpoint):
//     userspace drops and counts both. An IPv6 packet from an IPv4-mapped
//     source to a VIP with a route that restricts sources
//     (StatusPuntMappedSource). A destination that is no VIP is
//     StatusPuntNotVIP.
//   - What it cannot express it punts at its place in the precedence
//     order, as the kernel path punts a route it cannot express: a packet
//     that passes a route's other matches is punted
//     (StatusPuntUnexpressible) when the route has a byte match of the
//     packet's protocol; byte matches are not evaluated yet (the kernel
//     path evaluates those within its offset limit; userspace all).
//   - Limits, beyond which it punts (StatusPuntLimit) and Configure's
//     Report says so: MaxRoutesPerVIP routes per VIP (with more, the
//     routes from the MaxRoutesPerVIP-th on are one place that punts their
//     protocols' packets and echoes); MaxSourceCIDRs source CIDRs of the
//     VIP's family and MaxPortRanges source, and destination, port ranges
//     per route (a route with more punts the packets of its protocols, and
//     destination ports when they fit, at its place); route indexes up to
//     65534; Options.MaxServices Services (the routes to the others are
//     punted at their place) and Options.MaxVIPs VIPs (the others are
//     StatusPuntNotVIP). M may be anything the project builds (up to
//     maglev.MaxSize): each table is a map of its own size.
//   - Lengths: the IP length field cuts the packet (Ethernet padding is not
//     payload), as the decoder and the kernel cut it. Checksums are not
//     verified (as in the decoder; at tc ingress the kernel has not yet
//     verified the IPv4 header checksum either).
//   - The program writes its Result into the skb's control buffer
//     cb[0..4] (qdisc scratch space) for every packet: status, key length
//     and route, hash, entry, slot, mark. BPF_PROG_TEST_RUN returns it in
//     the context it copies out; Explain reads it so. Status 0 never comes
//     from a run to the end.
//   - Acting (bpf/forward.h). A punted packet (every status but
//     StatusDecided, no_route and no_endpoint included) goes to the stack
//     unchanged (TC_ACT_UNSPEC: tcx's next program, then the stack): the
//     nftables rules and nfqueue take it there, and userspace decides it,
//     or counts and drops a no_route or no_endpoint packet, as without
//     this program. A decided packet addressed to this host at layer 2
//     (PACKET_HOST: the kernel forwards no other) gets its endpoint's
//     fwmark in skb->mark, the mark the kernel path sets, and is counted;
//     then, when its endpoint (mark) has a next hop of the packet's family
//     (SetNextHops), its TTL or hop limit is above 1 and it fits the next
//     hop's MTU (below), the program decrements it (updating the IPv4 header checksum as the kernel's
//     ip_decrease_ttl does, or in IPv6 the skb's CHECKSUM_COMPLETE sum)
//     and redirects the packet with
//     bpf_redirect_neigh to that next hop on that interface (the kernel
//     resolves its link-layer address), past netfilter and the IP
//     forwarding path: no conntrack, no FORWARD or POSTROUTING hook, no
//     ForwDatagrams. Otherwise the marked packet goes to the stack
//     unchanged: without a next hop, policy routing forwards it by its
//     mark; with TTL or hop limit 1 or 0, the stack's forwarding sends
//     ICMP time exceeded; from a source the kernel never forwards from
//     (bpf/martian.h: 0/8, 127/8, multicast and broadcast; ::, ::1,
//     IPv4-mapped, link-local and multicast), the stack drops it; longer
//     than the next hop's MTU (ActionTooBig), the stack sends ICMP
//     fragmentation needed (IPv4 with DF) or packet too big (IPv6), or
//     fragments it (IPv4 without DF). Reverse path filtering (rp_filter)
//     is not done for redirected packets.
//   - The MTU (NextHop.MTU, the egress interface's; 0, not known, fits
//     nothing) is judged as the kernel's forwarding judges it
//     (ip_exceeds_mtu, ip6_pkt_too_big): a packet fits when its IP length
//     is at most the MTU or, of a GSO skb (gso_size set: GRO aggregated,
//     or a local socket's TSO or UDP GSO through a veth), when each
//     segment's is: IP header, transport header (TCP's by its data
//     offset, 8 bytes otherwise) and gso_size. A segment length it cannot
//     know (GSO_BY_FRAGS, a TCP header beyond the linear data) is too big:
//     the stack judges it. The TTL is checked first, as the kernel does.
//   - The XDP program (bpf/xdp.h; AttachXDP) parses and decides as the tc
//     program does (the same C) and forwards itself a decided packet
//     addressed to the interface's MAC (AttachXDP records it) whose
//     endpoint has a next hop of its family with MACs (NextHop.MAC and
//     SrcMAC: XDP has no neighbour table) and, when attached in driver
//     mode, an interface that takes XDP frames (ndo_xdp_xmit, which
//     SetNextHops asks the kernel about), from a source the kernel
//     forwards from, with TTL or hop limit above 1, that fits the MTU
//     (XDP frames are never GSO): TTL or hop limit decremented (the IPv4
//     checksum as the tc program updates it), destination and source MACs
//     written, route, endpoint and ActionXDPRedirect counted, and
//     bpf_redirect to the next hop's interface. Every other frame goes on
//     (XDP_PASS) unchanged and uncounted, to the tc program, which must be
//     attached to the same interface to act on it; so a packet is counted
//     once, by the program that acted. TestIntegrationXDPMatchesTC checks
//     both through BPF_PROG_TEST_RUN: the XDP program redirects exactly
//     what the tc program alone redirects to a next hop with MACs, to the
//     same endpoint, the same bytes but the MACs, and the counters of the
//     two set-ups agree.
//   - A run without an ingress device (skb->ingress_ifindex 0, which only
//     BPF_PROG_TEST_RUN gives) is only reported, never acted on: Explain
//     marks, counts and redirects nothing.
//   - Counters (per CPU, summed by Counters): per route (the kernel path's
//     route labels) and per endpoint address (its endpoint labels), the
//     decided packets acted on (by the tc or the XDP program, whichever
//     acted) and the bytes of their IP packets, as the kernel path's
//     nftables counters count them; and per Action. A route's counter
//     lives from the Configure that first programs it to the one that
//     removes it; Options.MaxRoutes routes have one, the others are punted
//     at their place (StatusPuntLimit) so that every packet is counted by
//     the program or by userspace.
//   - A frame whose headers are not in the skb's linear data is pulled
//     (bpf_skb_pull_data, the first 82 bytes at most); a failed pull is
//     StatusPuntNonlinear.
//   - Load returns errors that say what is missing (CAP_BPF, CAP_PERFMON
//     and CAP_NET_ADMIN, a kernel feature, or the verifier's log, through
//     *ebpf.VerifierError) and wrap the cause. It does not touch
//     RLIMIT_MEMLOCK: kernels with tcx (6.6+) charge BPF memory to the
//     memory cgroup.
//   - Attach attaches the tc program with a tcx link (6.6+) at ingress of
//     an interface, AttachXDP the XDP program with an XDP link in driver
//     or generic mode (XDPAuto: driver where the driver has it, but
//     generic on a veth, whose native XDP gets a local sender's frames
//     with unfinished checksums); Detach and Close detach them. The links
//     are this process's: pinning them and adopting them after a restart
//     is not done yet.
//   - The object's license is the repository's (Apache-2.0), so the kernel
//     refuses it GPL-only helpers: bpf_fib_lookup and bpf_check_mtu are,
//     bpf_redirect_neigh is not (checked on 6.18); forwarding takes the
//     next hop, its MTU and (for XDP) its MACs from a map that SetNextHops
//     fills (docs/bpf.md).
package bpfpath
