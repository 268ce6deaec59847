// Package bpfpath is sllbrd's eBPF datapath (issue 25, `--dataplane bpf`,
// not wired into sllbrd yet): a tc (tcx) ingress program, written in C
// (bpf/), compiled by clang through bpf2go into the committed objects
// ingress_bpfel.o and ingress_bpfeb.o, and loaded with github.com/cilium/ebpf.
// This first slice parses, builds the flow key, hashes it and looks up the
// Maglev entry; it forwards nothing. docs/bpf.md says how it is built.
//
// # Contract
//
//   - The program makes the userspace path's decision bit for bit: for
//     every packet it decides, the hash is flowkey.Hash of the packet as
//     package dataplane/packet decodes its IP bytes (the key laid out as
//     nftables registers, the kernel's jhash, seed maglev.FlowSeed), the
//     entry is maglev.ReciprocalScale(hash, M) and the slot is
//     maglev.Table.Lookup32(hash). SCTP is hashed on its ports only when the
//     Service says so (Configure). A differential test checks this through
//     BPF_PROG_TEST_RUN on the running kernel.
//   - It decides Ethernet frames carrying unfragmented IPv4 (any header
//     length) or IPv6 without extension headers with TCP, UDP, SCTP, ICMP
//     echo (in IPv4) or ICMPv6 echo (in IPv6), whose IP length fits the
//     frame: exactly the packets the decoder calls KindTransport or
//     KindICMPEcho, less those below. Everything else it punts, with a
//     Status saying why, and never returns a wrong answer:
//     non-IP Ethernet types and VLAN tags (StatusPuntNotIP); fragments
//     (StatusPuntFragment); IPv6 extension headers
//     (StatusPuntIPv6Extension); ICMP errors (StatusPuntICMPError); other
//     protocols and ICMP types (StatusPuntProtocol); malformed headers
//     (StatusPuntMalformed), which include two the decoder would still
//     decode but the kernel's IP receive path drops: an IP version unlike
//     the Ethernet type, and an IPv4 total length or IPv6 payload length
//     beyond the frame (the decoder reads that as nfqueue's copy range
//     cutting the packet; at tc ingress the frame is whole). A packet
//     without a table (Configure with no active slot) is
//     StatusPuntNoTable, with its hash.
//   - Lengths: the IP length field cuts the packet (Ethernet padding is not
//     payload), as the decoder and the kernel cut it. Checksums are not
//     verified (as in the decoder; at tc ingress the kernel has not yet
//     verified the IPv4 header checksum either).
//   - The program returns TC_ACT_UNSPEC (tcx: the next program, or the
//     stack) for every packet and writes its Result into the skb's control
//     buffer cb[0..4] (qdisc scratch space): status, hash, entry, slot, key
//     length. BPF_PROG_TEST_RUN returns it in the context it copies out;
//     Explain reads it so. Status 0 never comes from a run to the end.
//   - A frame whose headers are not in the skb's linear data is pulled
//     (bpf_skb_pull_data, the first 82 bytes at most); a failed pull is
//     StatusPuntNonlinear.
//   - Load returns errors that say what is missing (CAP_BPF and
//     CAP_NET_ADMIN, a kernel feature, or the verifier's log, through
//     *ebpf.VerifierError) and wrap the cause. It does not touch
//     RLIMIT_MEMLOCK: kernels with tcx (6.6+) charge BPF memory to the
//     memory cgroup.
//   - Configure rewrites the Maglev table map and the configuration in
//     place: a packet that runs meanwhile may see a mixture (a later slice
//     swaps whole tables). It is for one Service; per-Service tables,
//     VIP lookup, forwarding and attaching come in later slices.
//   - The object's license is the repository's (Apache-2.0), so the kernel
//     refuses it GPL-only helpers; forwarding with bpf_fib_lookup will
//     need a GPL-compatible (dual) license on bpf/.
package bpfpath
