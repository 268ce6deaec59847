/*
 * ingress.c: sllbrd's eBPF datapath, a tc (tcx) ingress program. For now it
 * decides and reports (result.h): the VIP's route (routes.h), then the
 * endpoint its Service's Maglev table gives the flow (tables.h). It
 * forwards nothing and always returns TC_ACT_UNSPEC (tcx: the next program,
 * or the stack). Package bpfpath documents the contract.
 */
#include "kernel.h"
#include "result.h"
#include "parse.h"
#include "flowhash.h"
#include "routes.h"
#include "tables.h"

/* decide finds f's VIP, its route and the endpoint, filling r. */
static __always_inline void decide(const struct flow *f, struct result *r)
{
	struct vip_key k = {.family = f->family};
	__u32 zero = 0, table = TABLE_NONE;

	__builtin_memcpy(k.addr, f->dst, sizeof(k.addr));
	void *routes = bpf_map_lookup_elem(&vip_routes, &k);
	if (!routes) {
		r->status = STATUS_PUNT_NOT_VIP;
		return;
	}
	const struct route_set *rs = bpf_map_lookup_elem(routes, &zero);
	if (!rs) {
		r->status = STATUS_PUNT_NOT_VIP;
		return;
	}
	r->status = match_route(rs, f, r, &table);
	if (r->status == STATUS_DECIDED)
		r->status = balance(f, table, r);
}

SEC("tc")
int sllbrd_ingress(struct __sk_buff *skb)
{
	struct flow f = {};
	struct result r = {.route = ROUTE_NONE};

	r.status = pull(skb);
	if (r.status == STATUS_DECIDED)
		r.status = parse_flow(skb, &f);
	if (r.status == STATUS_DECIDED)
		decide(&f, &r);
	write_result(skb, &r);
	return TC_ACT_UNSPEC;
}

/* The repository's license. The kernel lets only GPL-compatible programs
 * call GPL-only helpers (bpf_fib_lookup among them); bpf_redirect_neigh is
 * not one, so forwarding can take the next hop from a map (docs/bpf.md). */
char LICENSE[] SEC("license") = "Apache-2.0";
