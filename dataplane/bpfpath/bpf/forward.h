/*
 * forward.h: acting on a decision. A decided packet gets its endpoint's
 * fwmark (what the kernel path sets; policy routing can forward it) and is
 * counted; when its endpoint has a next hop here, the program forwards it
 * itself when it fits the next hop's MTU: TTL or hop limit decremented (the
 * IPv4 checksum updated), then bpf_redirect_neigh to the next hop, past
 * netfilter and the IP forwarding path. Package bpfpath (nexthops.go) fills next_hops.
 */
#ifndef SLLBRD_FORWARD_H
#define SLLBRD_FORWARD_H

#include "kernel.h"
#include "result.h"
#include "parse.h"
#include "routes.h"
#include "counters.h"
#include "martian.h"

/* An endpoint's mark and the packet's family (4 or 6): the key of its next
 * hop, as policy routing keys the endpoint's route (a rule per mark and
 * family; package dataplane gives every endpoint slot its own mark). */
struct endpoint_key {
	__u32 mark;
	__u32 family;
};

/* Flags of struct next_hop. */
#define NEXT_HOP_MAC 1        /* mac and src_mac are known: the XDP program
			       * may redirect (xdp.h) */
#define NEXT_HOP_XDP_TARGET 2 /* the interface takes XDP frames
			       * (ndo_xdp_xmit): a driver-mode XDP program
			       * may redirect to it */

/* Where an endpoint's packets of one family go: the next hop's family
 * (AF_INET or AF_INET6, struct bpf_redir_neigh's), its address as the
 * packet's bytes (IPv4 in addr[0]), the interface's index and MTU (0: not
 * known, so no packet fits and none is redirected), and for the XDP
 * program (which has no neighbour table) the next hop's link-layer
 * address and the interface's. */
struct next_hop {
	__u32 family;
	__u32 ifindex;
	__u32 mtu;
	__u32 flags; /* NEXT_HOP_* */
	__u32 addr[4];
	__u8 mac[6];
	__u8 src_mac[6];
};

/* struct endpoint_key -> its next hop; an endpoint without one is only
 * marked. Not preallocated (Go alone adds elements); an update replaces an
 * element whole. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 131072);
	__type(key, struct endpoint_key);
	__type(value, struct next_hop);
} next_hops SEC(".maps");

/* GSO_BY_FRAGS (include/linux/skbuff.h): a gso_size that says the
 * segments are the skb's frag list (SCTP), of their own lengths. */
#define GSO_BY_FRAGS 0xffff

#define TCP_MIN_HLEN 20
#define UDP_HLEN 8

/*
 * hop_limit returns the TTL (IPv4) or hop limit (IPv6) of skb's packet, of
 * family, or 0 when its header is no longer in the linear data.
 */
static __always_inline __u8 hop_limit(struct __sk_buff *skb, __u8 family)
{
	__u8 *ip = (__u8 *)(long)skb->data + ETH_HLEN;
	void *data_end = (void *)(long)skb->data_end;

	if (family == 4)
		return (void *)(ip + IPV4_MIN_HLEN) > data_end ? 0 : ip[8];
	return (void *)(ip + IPV6_HLEN) > data_end ? 0 : ip[7];
}

/*
 * too_big reports whether skb's packet f would not fit an interface of MTU
 * mtu, as the kernel's forwarding path judges it (ip_exceeds_mtu,
 * ip6_pkt_too_big): its IP length is above the MTU and, of a GSO skb (GRO
 * aggregated, or a local socket's through a veth; gso_size is the payload
 * of each segment), so is the IP length of a segment
 * (skb_gso_validate_network_len): IP header, transport header (TCP's by
 * its data offset; 8 bytes otherwise, as UDP's, which for the rest is
 * never less than the kernel counts) and gso_size. A segment length it
 * cannot know (GSO_BY_FRAGS, or a TCP header beyond the linear data) is
 * too big: the stack judges it then. An MTU of 0 fits nothing.
 */
static __always_inline int too_big(struct __sk_buff *skb, const struct flow *f, __u32 mtu)
{
	if (f->ip_len <= mtu)
		return 0;
	__u32 gso = skb->gso_size;
	if (gso == 0 || gso == GSO_BY_FRAGS)
		return 1;
	__u8 *ip = (__u8 *)(long)skb->data + ETH_HLEN;
	void *data_end = (void *)(long)skb->data_end;
	__u32 hlen = IPV6_HLEN;
	if (f->family == 4) {
		if ((void *)(ip + IPV4_MIN_HLEN) > data_end)
			return 1;
		hlen = (ip[0] & 0x0f) * 4;
	}
	__u32 thlen = UDP_HLEN;
	if (f->proto == IPPROTO_TCP) {
		__u8 *doff = ip + (hlen & 0x3f) + 12; /* data offset, in words */
		if ((void *)(doff + 1) > data_end)
			return 1;
		thlen = (*doff >> 4) * 4;
		if (thlen < TCP_MIN_HLEN)
			return 1;
	}
	return hlen + thlen + gso > mtu;
}

/*
 * ipv4_decrement_ttl decrements the TTL of the IPv4 header at ip (its
 * first 20 bytes checked to be there) and updates its checksum as the
 * kernel's ip_decrease_ttl does.
 */
static __always_inline void ipv4_decrement_ttl(__u8 *ip)
{
	/* The TTL is the high byte of the header's fifth 16-bit word: one
	 * less lowers the sum by 0x0100, so the checksum (its complement)
	 * rises by 0x0100, in one's complement. */
	__u32 check = be16_at(ip + 10) + 0x0100;
	check += check >= 0xffff;
	ip[10] = check >> 8;
	ip[11] = check;
	ip[8]--;
}

/*
 * decrement_ttl decrements the TTL (IPv4, updating the header checksum
 * as the kernel's ip_decrease_ttl does) or hop limit (IPv6, updating the
 * skb's packet checksum, if it has one) of skb's
 * packet, which parse_flow found to be of family. It returns 0, or -1 and
 * changes nothing when the packet must not be forwarded: a TTL or hop
 * limit of 0 or 1, or headers no longer in the linear data.
 */
static __always_inline int decrement_ttl(struct __sk_buff *skb, __u8 family)
{
	__u8 *ip = (__u8 *)(long)skb->data + ETH_HLEN;
	void *data_end = (void *)(long)skb->data_end;

	if (family == 4) {
		if ((void *)(ip + IPV4_MIN_HLEN) > data_end || ip[8] <= 1)
			return -1;
		ipv4_decrement_ttl(ip);
		return 0;
	}
	if ((void *)(ip + IPV6_HLEN) > data_end || ip[7] <= 1)
		return -1;
	/* IPv6 has no header checksum, but a received skb may carry the
	 * device's checksum of the whole packet (CHECKSUM_COMPLETE), which a
	 * new hop limit would make wrong for whoever validates with it (a
	 * veth into another namespace passes it on): the helper updates it.
	 * (In IPv4 the header's sum, checksum included, does not change.) */
	__u8 hop_limit = ip[7] - 1;
	if (bpf_skb_store_bytes(skb, ETH_HLEN + 7, &hop_limit, 1, BPF_F_RECOMPUTE_CSUM) != 0)
		return -1;
	return 0;
}

/*
 * act does what r decided for skb's packet f (c: its route's counters and
 * table) and returns the verdict. It is a global function, which the
 * verifier checks once, on its own, rather than once for every state the
 * decision reaches it in (inlined, with the martian check, the verifier
 * walked 177,449 instructions instead of 142,330); its pointers are
 * therefore checked for NULL. A packet with ingress_ifindex 0
 * comes from BPF_PROG_TEST_RUN without one (Explain's runs; the kernel
 * gives every received packet its device's) and is only reported. Only a
 * decided packet addressed to this host at layer 2 (which the kernel
 * would forward) is acted on; every other goes to the stack unchanged.
 */
__noinline int act(struct __sk_buff *skb, const struct flow *f, const struct result *r, const struct choice *c)
{
	if (!skb || !f || !r || !c)
		return TC_ACT_UNSPEC;
	if (skb->ingress_ifindex == 0)
		return TC_ACT_UNSPEC;
	if (r->status != STATUS_DECIDED || skb->pkt_type != PACKET_HOST) {
		count_action(ACTION_PUNT, skb->len > ETH_HLEN ? skb->len - ETH_HLEN : 0);
		return TC_ACT_UNSPEC;
	}
	skb->mark = r->mark;
	__u32 counter = c->counter;
	struct slot_key s = {.table = c->table, .slot = r->slot};
	add(bpf_map_lookup_elem(&route_counters, &counter), f->ip_len);
	add(bpf_map_lookup_elem(&endpoint_counters, &s), f->ip_len);

	struct endpoint_key k = {.mark = r->mark, .family = f->family};
	const struct next_hop *nh = bpf_map_lookup_elem(&next_hops, &k);
	if (!nh) {
		count_action(ACTION_MARK, f->ip_len);
		return TC_ACT_UNSPEC;
	}
	if (martian_source(f->family, f->src)) {
		count_action(ACTION_MARTIAN_SOURCE, f->ip_len);
		return TC_ACT_UNSPEC;
	}
	/* The kernel's order: TTL (time exceeded), then MTU. */
	if (hop_limit(skb, f->family) <= 1) {
		count_action(ACTION_TTL_EXCEEDED, f->ip_len);
		return TC_ACT_UNSPEC;
	}
	if (too_big(skb, f, nh->mtu)) {
		count_action(ACTION_TOO_BIG, f->ip_len);
		return TC_ACT_UNSPEC;
	}
	struct bpf_redir_neigh p = {.nh_family = nh->family};
	__builtin_memcpy(p.ipv6_nh, nh->addr, sizeof(p.ipv6_nh));
	__u32 ifindex = nh->ifindex;
	if (decrement_ttl(skb, f->family) != 0) {
		count_action(ACTION_TTL_EXCEEDED, f->ip_len);
		return TC_ACT_UNSPEC;
	}
	count_action(ACTION_REDIRECT, f->ip_len);
	return bpf_redirect_neigh(ifindex, &p, sizeof(p), 0);
}

#endif
