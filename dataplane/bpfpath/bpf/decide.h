/*
 * decide.h: the decision both front ends make (ingress.c): the packet's
 * VIP, its route (routes.h), and the endpoint its route's Service's Maglev
 * table gives the flow (tables.h).
 */
#ifndef SLLBRD_DECIDE_H
#define SLLBRD_DECIDE_H

#include "kernel.h"
#include "result.h"
#include "parse.h"
#include "routes.h"
#include "tables.h"

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

#endif
