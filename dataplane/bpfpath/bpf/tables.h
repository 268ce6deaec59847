/*
 * tables.h: every Service's Maglev table of each family, entry -> the
 * endpoint's fwmark and slot, and the lookup that picks the entry of a
 * flow hash as maglev.Table.Lookup32 does. Package bpfpath (tables.go)
 * fills them from fastpath.Input's Services.
 */
#ifndef SLLBRD_TABLES_H
#define SLLBRD_TABLES_H

#include "kernel.h"
#include "result.h"
#include "flowhash.h"

/* struct route's table of a route whose Service does not exist. */
#define TABLE_NONE 0xffffffff

/* Flags of a table (its header's slot). */
#define TABLE_SCTP_PORTS_ONLY 1 /* hash SCTP on its ports and protocol only */

/*
 * One element of a table. Element 0 is the header: mark holds M, the
 * number of entries (0: no ready endpoint of the family), and slot the
 * TABLE_* flags. Elements 1..M are the entries 0..M-1: the endpoint's
 * fwmark and slot.
 */
struct table_entry {
	__u32 mark;
	__u32 slot;
};

/* Service and family -> its table, at 2 * the Service's index + (family
 * 6). A table is an inner array of M+1 elements (BPF_F_INNER_MAP: each of
 * its own size), so that a new table replaces the old one whole, by one
 * update of this map: a packet sees one or the other. The loader sets
 * max_entries (2 * Options.MaxServices). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2048);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__uint(map_flags, BPF_F_INNER_MAP);
		__uint(max_entries, 1);
		__type(key, __u32);
		__type(value, struct table_entry);
	});
} maglev_tables SEC(".maps");

/*
 * hash_flow sets r's hash and key_len for f under the table whose header
 * is hdr (its SCTP rule) and returns the table's M. It is a function of
 * its own so that struct table_entry is in the object's BTF, whole: the
 * inner map's value type, and bpf2go's (clang emits a struct that only
 * map definitions point to as a forward declaration).
 */
static __noinline __u32 hash_flow(const struct table_entry *hdr, const struct flow *f, struct result *r)
{
	int ports_only = f->proto == IPPROTO_SCTP && (hdr->slot & TABLE_SCTP_PORTS_ONLY);
	r->hash = flow_hash(f, ports_only, &r->key_len);
	return hdr->mark;
}

/*
 * balance hashes f and picks its entry in table, setting r's hash, key_len,
 * entry, slot and mark. It returns STATUS_DECIDED, or
 * STATUS_PUNT_NO_ENDPOINT when the table does not exist (no Service) or is
 * empty (then the hash is set).
 */
static __always_inline __u32 balance(const struct flow *f, __u32 table, struct result *r)
{
	__u32 key = 0;
	void *t = bpf_map_lookup_elem(&maglev_tables, &table);
	if (!t)
		return STATUS_PUNT_NO_ENDPOINT;
	const struct table_entry *hdr = bpf_map_lookup_elem(t, &key);
	if (!hdr)
		return STATUS_PUNT_NO_ENDPOINT;
	__u32 m = hash_flow(hdr, f, r);
	if (m == 0)
		return STATUS_PUNT_NO_ENDPOINT;
	__u32 entry = reciprocal_scale(r->hash, m);
	key = entry + 1;
	const struct table_entry *e = bpf_map_lookup_elem(t, &key);
	if (!e)
		return STATUS_PUNT_NO_ENDPOINT; /* a table shorter than its header: never written */
	r->entry = entry;
	r->slot = e->slot;
	r->mark = e->mark;
	return STATUS_DECIDED;
}

#endif
