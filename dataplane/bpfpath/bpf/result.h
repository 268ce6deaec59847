/*
 * result.h: what the program reports for every packet, in the skb's control
 * buffer (cb[0..4], qdisc scratch space that tc programs own), where
 * BPF_PROG_TEST_RUN returns it in the context it copies out. Package bpfpath
 * (result.go) reads the same layout.
 */
#ifndef SLLBRD_RESULT_H
#define SLLBRD_RESULT_H

#include "kernel.h"

/*
 * enum status says what the program decided. bpf2go turns it into Go
 * constants (-type status), so Go and C share these values. 0 is never
 * written: a result of 0 means the program did not run to its end. Every
 * status but STATUS_DECIDED is a punt: the packet goes on to the stack (and
 * the nfqueue rules), where userspace decides it as it does without this
 * program.
 */
enum status {
	/* A route matched and its Service's table chose an endpoint: route,
	 * hash, entry, slot, mark and key_len are set. */
	STATUS_DECIDED = 1,
	/* Punt: the Ethernet type is neither IPv4 nor IPv6 (VLAN tags
	 * included: they are not parsed yet). */
	STATUS_PUNT_NOT_IP = 2,
	/* Punt: a header the kernel's IP receive path drops or the userspace
	 * decoder calls invalid: truncated, IPv4 header length below 5 words,
	 * total length below the header or beyond the packet, IPv6 payload
	 * length 0 or beyond the packet, IP version unlike the Ethernet type,
	 * transport header shorter than its ports (4 bytes) or ICMP header (8). */
	STATUS_PUNT_MALFORMED = 3,
	/* Punt: an IPv4 fragment or an IPv6 packet whose first extension
	 * header is a fragment header (later fragments follow the first one's
	 * decision, which only the userspace fragment table knows). */
	STATUS_PUNT_FRAGMENT = 4,
	/* Punt: an IPv6 extension header (hop-by-hop, routing, AH, destination
	 * options) follows the IPv6 header; not walked yet. */
	STATUS_PUNT_IPV6_EXTENSION = 5,
	/* Punt: a protocol without a flow key here: not TCP, UDP, SCTP, or
	 * ICMP (in IPv4) / ICMPv6 (in IPv6) echo. */
	STATUS_PUNT_PROTOCOL = 6,
	/* Punt: an ICMP or ICMPv6 error (hashed on the flow it quotes by the
	 * userspace path; not parsed here yet). */
	STATUS_PUNT_ICMP_ERROR = 7,
	/* Punt, userspace's no_endpoint: the matched route's Service does not
	 * exist or has no ready endpoint of the packet's family (no table).
	 * route is set; hash and key_len too when the table exists but has
	 * no entry. */
	STATUS_PUNT_NO_ENDPOINT = 8,
	/* Punt: the headers could not be pulled into the skb's linear data. */
	STATUS_PUNT_NONLINEAR = 9,
	/* Punt: the destination is no VIP of the configuration (not the
	 * balancer's packet, or a VIP beyond the limits). */
	STATUS_PUNT_NOT_VIP = 10,
	/* Punt, userspace's no_route: no route of the VIP matches. */
	STATUS_PUNT_NO_ROUTE = 11,
	/* Punt: an IPv6 packet from an IPv4-mapped source (::ffff:0:0/96) to a
	 * VIP with a route that restricts sources (userspace compares such a
	 * source with the IPv4 source CIDRs), as the kernel path punts it. */
	STATUS_PUNT_MAPPED_SOURCE = 12,
	/* Punt: the packet passes every match of the route at index route
	 * but its byte matches, which the program does not evaluate yet. */
	STATUS_PUNT_UNEXPRESSIBLE = 13,
	/* Punt: the packet reached a route (route) or a place in the VIP's
	 * precedence order beyond the program's limits (routes.h). */
	STATUS_PUNT_LIMIT = 14,
};

/* ROUTE_NONE is the route of a result that names none. */
#define ROUTE_NONE 0xffff

/*
 * The layout of the result in cb[]: cb[0] holds the status (bits 0-7), the
 * bytes of flow key hashed (bits 8-15) and the route's index in precedence
 * order (bits 16-31, ROUTE_NONE for none).
 */
enum result_word {
	RESULT_STATUS = 0,
	RESULT_HASH = 1,  /* the flow hash (flowkey.Hash) */
	RESULT_ENTRY = 2, /* reciprocal_scale(hash, M) */
	RESULT_SLOT = 3,  /* the slot that owns the entry (Table.Lookup32) */
	RESULT_MARK = 4,  /* the slot's endpoint fwmark */
};

struct result {
	__u32 status;
	__u32 hash;
	__u32 entry;
	__u32 slot;
	__u32 mark;
	__u32 key_len;
	__u32 route;
};

static __always_inline void write_result(struct __sk_buff *skb, const struct result *r)
{
	skb->cb[RESULT_STATUS] = (r->status & 0xff) | (r->key_len & 0xff) << 8 | r->route << 16;
	skb->cb[RESULT_HASH] = r->hash;
	skb->cb[RESULT_ENTRY] = r->entry;
	skb->cb[RESULT_SLOT] = r->slot;
	skb->cb[RESULT_MARK] = r->mark;
}

#endif
