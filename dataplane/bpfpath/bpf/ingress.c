/*
 * ingress.c: sllbrd's eBPF datapath, a tc (tcx) ingress program. It decides
 * (the VIP's route, routes.h; the endpoint its Service's Maglev table gives
 * the flow, tables.h), reports the decision (result.h), and acts on it
 * (forward.h): marks, counts (counters.h) and redirects a decided packet to
 * its endpoint's next hop, or hands it to the stack (TC_ACT_UNSPEC, tcx:
 * the next program, or the stack). Package bpfpath documents the contract.
 */
#include "kernel.h"
#include "result.h"
#include "parse.h"
#include "flowhash.h"
#include "routes.h"
#include "tables.h"
#include "counters.h"
#include "forward.h"

/* decide finds f's VIP, its route and the endpoint, filling r and c. */
static __always_inline void decide(const struct flow *f, struct result *r, struct choice *c)
{
	struct vip_key k = {.family = f->family};
	__u32 zero = 0;

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
	r->status = match_route(rs, f, r, c);
	if (r->status == STATUS_DECIDED)
		r->status = balance(f, c->table, r);
}

SEC("tc")
int sllbrd_ingress(struct __sk_buff *skb)
{
	struct flow f = {};
	struct result r = {.route = ROUTE_NONE};
	struct choice c = {.table = TABLE_NONE, .counter = COUNTER_NONE};

	r.status = pull(skb);
	if (r.status == STATUS_DECIDED)
		r.status = parse_flow(skb, &f);
	if (r.status == STATUS_DECIDED)
		decide(&f, &r, &c);
	write_result(skb, &r);
	return act(skb, &f, &r, &c);
}

/* The repository's license. The kernel lets only GPL-compatible programs
 * call GPL-only helpers (bpf_fib_lookup among them); bpf_redirect_neigh is
 * not one, so forwarding takes the next hop from a map (forward.h). */
char LICENSE[] SEC("license") = "Apache-2.0";
