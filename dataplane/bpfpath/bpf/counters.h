/*
 * counters.h: what the program counts of the packets it acts on: per route
 * and per endpoint (the counts the kernel path keeps in nftables counter
 * objects), and per action. Every counter is per CPU, so the program adds
 * without atomics; package bpfpath (counters.go) sums the CPUs' values.
 */
#ifndef SLLBRD_COUNTERS_H
#define SLLBRD_COUNTERS_H

#include "kernel.h"

/* struct route's counter of a route that has none (never written: the
 * loader punts a route beyond route_counters). */
#define COUNTER_NONE 0xffff

/* Packets, and bytes of their IP packets (IP header and payload, as the
 * kernel path's nftables counters count them at prerouting). */
struct count {
	__u64 packets;
	__u64 bytes;
};

/*
 * enum action says what the program did with a packet. bpf2go turns it
 * into Go constants (-type action).
 */
enum action {
	/* Not decided (a punt), or not addressed to this host at layer 2:
	 * to the stack unchanged. */
	ACTION_PUNT = 0,
	/* Decided, no next hop for its endpoint: the mark set, to the stack
	 * (policy routing forwards it, as with the kernel path). */
	ACTION_MARK = 1,
	/* Decided, a next hop, but the TTL or hop limit would reach 0: the
	 * mark set, to the stack unchanged (which sends ICMP time exceeded). */
	ACTION_TTL_EXCEEDED = 2,
	/* Decided and redirected to its next hop (bpf_redirect_neigh). */
	ACTION_REDIRECT = 3,
	/* Decided, a next hop, but a source the kernel never forwards from
	 * (martian.h): the mark set, to the stack unchanged, which drops it. */
	ACTION_MARTIAN_SOURCE = 4,
	/* Decided, a next hop, but the packet (or, of a GSO skb, a segment)
	 * is longer than the next hop's MTU: the mark set, to the stack
	 * unchanged, which sends ICMP fragmentation needed or packet too big,
	 * or fragments an IPv4 packet without DF. */
	ACTION_TOO_BIG = 5,
	/* Decided, and redirected to its next hop by the XDP program (xdp.h),
	 * the MACs rewritten, before the skb and the tc program. */
	ACTION_XDP_REDIRECT = 6,
	ACTION_COUNT = 7,
};

/* A route's counters at the index Configure gives it (struct route's
 * counter). The loader sets max_entries (Options.MaxRoutes). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct count);
} route_counters SEC(".maps");

/* An endpoint slot in a Service's table of one family: the table's key in
 * maglev_tables (tables.h) and the slot. */
struct slot_key {
	__u32 table;
	__u32 slot;
};

/* An endpoint's counters of each family, as the kernel path's endpoint
 * counter objects (per Service, slot and address). Configure adds an
 * element, zero, before a table can name the slot and deletes it after no
 * table does; the program only looks up. Not preallocated: max_entries
 * is only a bound, 65536 endpoint slots (as many as the default block of
 * marks package dataplane gives out) of each family. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 131072);
	__type(key, struct slot_key);
	__type(value, struct count);
} endpoint_counters SEC(".maps");

/* The packets of each enum action. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ACTION_COUNT);
	__type(key, __u32);
	__type(value, struct count);
} action_counters SEC(".maps");

/*
 * add counts a packet of len IP bytes in c (none when c is NULL). It is a
 * function of its own so that struct count is in the object's BTF, whole,
 * where bpf2go finds it (see tables.h's hash_flow).
 */
static __noinline void add(struct count *c, __u32 len)
{
	if (c) {
		c->packets++;
		c->bytes += len;
	}
}

/* count_action counts a packet of len IP bytes under action a (a function
 * of its own, for enum action in the BTF). */
static __noinline void count_action(enum action a, __u32 len)
{
	__u32 key = a;
	add(bpf_map_lookup_elem(&action_counters, &key), len);
}

#endif
