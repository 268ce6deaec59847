/*
 * ingress.c: sllbrd's eBPF datapath, two front ends of one decision
 * (decide.h: the VIP's route, routes.h; the endpoint its Service's Maglev
 * table gives the flow, tables.h), sharing every map:
 *
 * - sllbrd_ingress, a tc (tcx) ingress program, reports the decision
 *   (result.h) and acts on it (forward.h): marks, counts (counters.h) and
 *   redirects a decided packet to its endpoint's next hop, or hands it to
 *   the stack (TC_ACT_UNSPEC, tcx: the next program, or the stack);
 * - sllbrd_xdp, an XDP program, redirects what it can forward itself
 *   (xdp.h) and passes everything else, uncounted, on to the tc program.
 *
 * Package bpfpath documents the contract.
 */
#include "kernel.h"
#include "result.h"
#include "parse.h"
#include "flowhash.h"
#include "routes.h"
#include "tables.h"
#include "counters.h"
#include "forward.h"
#include "decide.h"
#include "xdp.h"

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

SEC("xdp")
int sllbrd_xdp(struct xdp_md *ctx)
{
	struct flow f = {};
	struct result r = {.route = ROUTE_NONE};
	struct choice c = {.table = TABLE_NONE, .counter = COUNTER_NONE};

	r.status = parse_xdp(ctx, &f);
	if (r.status == STATUS_DECIDED)
		decide(&f, &r, &c);
	return xdp_act(ctx, &f, &r, &c);
}

/* The repository's license. The kernel lets only GPL-compatible programs
 * call GPL-only helpers (bpf_fib_lookup and bpf_check_mtu among them);
 * bpf_redirect_neigh and bpf_redirect are not, so forwarding takes the next
 * hop, its MTU and MACs from a map (forward.h). */
char LICENSE[] SEC("license") = "Apache-2.0";
