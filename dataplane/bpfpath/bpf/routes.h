/*
 * routes.h: the routes of each VIP, in precedence order, and the walk that
 * finds the one a packet matches, as package dataplane/classify does for
 * what the program can express (protocol, source CIDRs, source and
 * destination port ranges). Package bpfpath (routes.go) fills the maps
 * from the configuration the kernel path compiles (fastpath.Input).
 */
#ifndef SLLBRD_ROUTES_H
#define SLLBRD_ROUTES_H

#include "kernel.h"
#include "result.h"
#include "parse.h"

/* Limits of one VIP's route set; doc.go says what lies beyond them. */
#define MAX_ROUTES 16     /* routes per VIP, the last a limit marker if more */
#define MAX_CIDRS 8       /* source CIDRs of the VIP's family per route */
#define MAX_PORT_RANGES 8 /* source port ranges, and destination, per route */

/* Bits of struct route's protos and byte_protos. */
#define PROTO_BIT_TCP 1
#define PROTO_BIT_UDP 2
#define PROTO_BIT_SCTP 4

/* Flags of struct route. */
#define ROUTE_ANY_SOURCE 1 /* every source matches: src is not read */
#define ROUTE_OVER_LIMIT 2 /* beyond a limit: a packet of its protocols
			    * (and destination ports, when they fit) that
			    * reaches it is punted (STATUS_PUNT_LIMIT) */

/* Flags of struct route_set. */
#define SET_PUNT_MAPPED_SOURCE 1 /* a route restricts sources: an IPv6
				  * packet from ::ffff:0:0/96 is punted */

/* A source CIDR: addr & mask, both as the packet's bytes (IPv4 in word 0,
 * the other words zero). */
struct cidr {
	__u32 addr[4];
	__u32 mask[4];
};

/* An inclusive port range, in host byte order. */
struct port_range {
	__u16 from;
	__u16 to;
};

/* One route as the program matches it. No port range (sport_count or
 * dport_count 0) means any port. */
struct route {
	__u32 rank;       /* its index in precedence order (classify's), the
			   * result's route */
	__u32 table;      /* its Service's table of the VIP's family
			   * (maglev_tables' key); TABLE_NONE: no Service */
	__u8 protos;      /* PROTO_BIT_*: the protocols it matches */
	__u8 byte_protos; /* PROTO_BIT_*: those with byte matches, which are
			   * not evaluated: a packet that passes the other
			   * matches is punted (STATUS_PUNT_UNEXPRESSIBLE) */
	__u8 flags;       /* ROUTE_* */
	__u8 src_count;
	__u8 sport_count;
	__u8 dport_count;
	__u16 counter;    /* its packet and byte counters' index in
			   * route_counters (counters.h) */
	struct cidr src[MAX_CIDRS];
	struct port_range sport[MAX_PORT_RANGES];
	struct port_range dport[MAX_PORT_RANGES];
};

/* A VIP's routes, in precedence order. */
struct route_set {
	__u32 route_count; /* at most MAX_ROUTES */
	__u32 flags;    /* SET_* */
	struct route routes[MAX_ROUTES];
};

/* The key of a VIP: its address as the packet's bytes (IPv4 in word 0) and
 * family (4 or 6). */
struct vip_key {
	__u32 addr[4];
	__u32 family;
};

/* VIP -> its route set. A route set lives alone in an inner array of one
 * element, so that a new set replaces the old one whole, by one update of
 * this map: a packet sees one or the other. Not preallocated: a replaced
 * or deleted element is freed after the readers that may hold it. The
 * loader sets max_entries (Options.MaxVIPs). (The inner map's definition
 * is inline: clang emits a struct that only map definitions point to as a
 * forward declaration, which has no size.) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, struct vip_key);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__uint(max_entries, 1);
		__type(key, __u32);
		__type(value, struct route_set);
	});
} vip_routes SEC(".maps");

/* What match_route chose besides the result: the route's Service's table
 * (TABLE_NONE: none) and the route's counters. */
struct choice {
	__u32 table;
	__u32 counter;
};

/* proto_bit is PROTO_BIT_* of a transport protocol (0 for echo). */
static __always_inline __u8 proto_bit(__u8 proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return PROTO_BIT_TCP;
	case IPPROTO_UDP:
		return PROTO_BIT_UDP;
	case IPPROTO_SCTP:
		return PROTO_BIT_SCTP;
	}
	return 0;
}

/* is_mapped reports whether an IPv6 source is IPv4-mapped: its bytes 8..11
 * are 00 00 ff ff, compared as the word they make in memory. */
static __always_inline int is_mapped(const struct flow *f)
{
	union {
		__u8 b[4];
		__u32 w;
	} ffff = {.b = {0, 0, 0xff, 0xff}};
	return f->family == 6 && f->src[0] == 0 && f->src[1] == 0 && f->src[2] == ffff.w;
}

static __always_inline int source_matches(const struct route *rt, const struct flow *f)
{
	if (rt->flags & ROUTE_ANY_SOURCE)
		return 1;
	for (__u32 j = 0; j < MAX_CIDRS; j++) {
		if (j >= rt->src_count)
			break;
		const struct cidr *c = &rt->src[j];
		if ((f->src[0] & c->mask[0]) == c->addr[0] && (f->src[1] & c->mask[1]) == c->addr[1] &&
		    (f->src[2] & c->mask[2]) == c->addr[2] && (f->src[3] & c->mask[3]) == c->addr[3])
			return 1;
	}
	return 0;
}

static __always_inline int port_matches(const struct port_range *ranges, __u8 n, __u16 port)
{
	if (n == 0)
		return 1;
	for (__u32 j = 0; j < MAX_PORT_RANGES; j++) {
		if (j >= n)
			break;
		if (port >= ranges[j].from && port <= ranges[j].to)
			return 1;
	}
	return 0;
}

/*
 * match_route walks rs in precedence order for the packet f, as
 * classify.Table.Lookup does: an echo matches on sources only, a TCP, UDP
 * or SCTP packet on protocol, destination ports, sources and source ports.
 * It returns STATUS_DECIDED with the route's rank, table and counter set, or a punt
 * (with the rank of the route it stopped at, if any). It is a function of
 * its own so that struct route_set is in the object's BTF, whole (see
 * tables.h's hash_flow).
 */
static __noinline __u32 match_route(const struct route_set *rs, const struct flow *f, struct result *r, struct choice *c)
{
	if ((rs->flags & SET_PUNT_MAPPED_SOURCE) && is_mapped(f))
		return STATUS_PUNT_MAPPED_SOURCE;
	__u8 bit = f->echo ? 0 : proto_bit(f->proto);
	const __u8 *ports = (const __u8 *)&f->ports;
	__u16 sport = be16_at(ports), dport = be16_at(ports + 2);

	for (__u32 i = 0; i < MAX_ROUTES; i++) {
		if (i >= rs->route_count)
			break;
		const struct route *rt = &rs->routes[i];
		if (bit && !(rt->protos & bit))
			continue;
		if (bit && !port_matches(rt->dport, rt->dport_count, dport))
			continue;
		if (rt->flags & ROUTE_OVER_LIMIT) {
			r->route = rt->rank;
			return STATUS_PUNT_LIMIT;
		}
		if (!source_matches(rt, f))
			continue;
		if (bit && !port_matches(rt->sport, rt->sport_count, sport))
			continue;
		r->route = rt->rank;
		if (rt->byte_protos & bit)
			return STATUS_PUNT_UNEXPRESSIBLE;
		c->table = rt->table;
		c->counter = rt->counter;
		return STATUS_DECIDED;
	}
	return STATUS_PUNT_NO_ROUTE;
}

#endif
