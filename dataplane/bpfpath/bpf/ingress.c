/*
 * ingress.c: sllbrd's eBPF datapath, a tc (tcx) ingress program. For now it
 * decides and reports (result.h); it forwards nothing and always returns
 * TC_ACT_UNSPEC (tcx: the next program, or the stack). Package bpfpath
 * documents the contract.
 */
#include "kernel.h"
#include "result.h"
#include "parse.h"
#include "flowhash.h"

/* Flags of struct config. */
#define CONFIG_SCTP_PORTS_ONLY 1 /* hash SCTP on its ports and protocol only */

/* The one Service this program balances for now. */
struct config {
	__u32 table_size; /* M: entries of the Maglev table; 0: no table */
	__u32 flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} config SEC(".maps");

/* The Maglev table: entry -> slot (maglev.Table.AppendEntrySlots). The
 * loader sets max_entries to the table size it is asked for. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16381);
	__type(key, __u32);
	__type(value, __u32);
} maglev_table SEC(".maps");

static __always_inline void decide(const struct flow *f, struct result *r)
{
	__u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);

	if (!cfg) {
		r->status = STATUS_PUNT_NO_TABLE;
		return;
	}
	int ports_only = f->proto == IPPROTO_SCTP && (cfg->flags & CONFIG_SCTP_PORTS_ONLY);
	r->hash = flow_hash(f, ports_only, &r->key_len);
	__u32 m = cfg->table_size;
	if (m == 0) {
		r->status = STATUS_PUNT_NO_TABLE;
		return;
	}
	__u32 entry = reciprocal_scale(r->hash, m);
	__u32 *slot = bpf_map_lookup_elem(&maglev_table, &entry);
	if (!slot) {
		r->status = STATUS_PUNT_NO_TABLE;
		return;
	}
	r->entry = entry;
	r->slot = *slot;
}

SEC("tc")
int sllbrd_ingress(struct __sk_buff *skb)
{
	struct flow f = {};
	struct result r = {};

	r.status = pull(skb);
	if (r.status == STATUS_DECIDED)
		r.status = parse_flow(skb, &f);
	if (r.status == STATUS_DECIDED)
		decide(&f, &r);
	write_result(skb, &r);
	return TC_ACT_UNSPEC;
}

/* The repository's license. The kernel lets only GPL-compatible programs
 * call GPL-only helpers (bpf_fib_lookup among them): forwarding will need a
 * dual license here (doc.go). */
char LICENSE[] SEC("license") = "Apache-2.0";
