/*
 * xdp.h: the XDP front end. It parses and decides as the tc program does
 * (parse.h, decide.h), and forwards itself only what it can forward whole:
 * a decided packet addressed to the interface's MAC, whose endpoint has a
 * next hop with known MACs (no neighbour table here) that this attachment
 * may redirect to, from a source the kernel forwards from, with TTL or hop
 * limit above 1, that fits the MTU. Such a packet has its TTL or hop limit
 * decremented and its Ethernet header rewritten, is counted, and goes out
 * of the next hop's interface (bpf_redirect). Every other packet goes on
 * (XDP_PASS) unchanged and uncounted, to the tc program, which acts on it
 * and counts it: a packet is counted once, by the program that acted.
 */
#ifndef SLLBRD_XDP_H
#define SLLBRD_XDP_H

#include "kernel.h"
#include "result.h"
#include "parse.h"
#include "routes.h"
#include "counters.h"
#include "martian.h"
#include "forward.h"

#define ETH_ALEN 6

/* Flags of struct xdp_iface. */
#define XDP_IFACE_GENERIC 1 /* attached in generic (skb) mode: a redirect
			     * goes out through the stack's transmit path,
			     * to any interface */

/* An interface the XDP program is attached to: its MAC (XDP has no
 * pkt_type: a frame to another one is not this host's to forward) and how
 * it is attached. */
struct xdp_iface {
	__u8 mac[ETH_ALEN];
	__u16 flags; /* XDP_IFACE_* */
};

/* Interface index -> struct xdp_iface, written by package bpfpath
 * (AttachXDP) before it attaches, deleted after it detaches. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct xdp_iface);
} xdp_ifaces SEC(".maps");

/* parse_xdp parses ctx's frame into f (a linear frame: the program does
 * not take multi-buffer frames). */
static __always_inline enum status parse_xdp(struct xdp_md *ctx, struct flow *f)
{
	const __u8 *eth = (const __u8 *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if ((void *)(eth + ETH_HLEN) > data_end)
		return STATUS_PUNT_MALFORMED;
	return parse_frame(eth, data_end, bpf_xdp_get_buff_len(ctx) - ETH_HLEN, f);
}

static __always_inline int mac_equal(const __u8 *a, const __u8 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3] && a[4] == b[4] && a[5] == b[5];
}

/*
 * xdp_act forwards ctx's packet f, decided as r (c: its route's counters
 * and table), when it can (above), and returns the verdict. A global
 * function, verified once (as forward.h's act).
 */
__noinline int xdp_act(struct xdp_md *ctx, const struct flow *f, const struct result *r, const struct choice *c)
{
	if (!ctx || !f || !r || !c)
		return XDP_PASS;
	if (r->status != STATUS_DECIDED)
		return XDP_PASS;
	__u8 *eth = (__u8 *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *ip = eth + ETH_HLEN;
	if ((void *)ip > data_end)
		return XDP_PASS;
	__u32 in = ctx->ingress_ifindex;
	const struct xdp_iface *ifc = bpf_map_lookup_elem(&xdp_ifaces, &in);
	if (!ifc || !mac_equal(eth, ifc->mac))
		return XDP_PASS;
	struct endpoint_key k = {.mark = r->mark, .family = f->family};
	const struct next_hop *nh = bpf_map_lookup_elem(&next_hops, &k);
	if (!nh || !(nh->flags & NEXT_HOP_MAC))
		return XDP_PASS;
	if (!(ifc->flags & XDP_IFACE_GENERIC) && !(nh->flags & NEXT_HOP_XDP_TARGET))
		return XDP_PASS;
	if (martian_source(f->family, f->src) || f->ip_len > nh->mtu)
		return XDP_PASS;
	if (f->family == 4) {
		if ((void *)(ip + IPV4_MIN_HLEN) > data_end || ip[8] <= 1)
			return XDP_PASS;
		ipv4_decrement_ttl(ip);
	} else {
		if ((void *)(ip + IPV6_HLEN) > data_end || ip[7] <= 1)
			return XDP_PASS;
		ip[7]--; /* no checksum covers it; an skb made of the frame has none */
	}
	__u32 counter = c->counter;
	struct slot_key s = {.table = c->table, .slot = r->slot};
	add(bpf_map_lookup_elem(&route_counters, &counter), f->ip_len);
	add(bpf_map_lookup_elem(&endpoint_counters, &s), f->ip_len);
	count_action(ACTION_XDP_REDIRECT, f->ip_len);
	__builtin_memcpy(eth, nh->mac, ETH_ALEN);
	__builtin_memcpy(eth + ETH_ALEN, nh->src_mac, ETH_ALEN);
	return bpf_redirect(nh->ifindex, 0);
}

#endif
