// Package targetnet configures the network namespace of an application
// pod (a target of a Gateway) as `sllbrd target` is told to: the Gateways'
// VIPs as local addresses, and everything sent from a VIP routed back
// through the Gateway's SLLBR pods. It knows netlink and plain types only;
// kube/targetpod turns the pod annotation into a Desired.
//
// Per Gateway and per address family that has VIPs:
//
//   - each VIP as a /32 or /128 on lo (IPv6 with IFA_F_NODAD), marked with
//     IFA_PROTO Protocol (83);
//   - "ip rule from VIP lookup TABLE" at priority RulePriority (10200),
//     protocol Protocol, and "ip rule from VIP blackhole" behind it
//     (DropRulePriority, 10201): a lookup that misses the whole table (an
//     IPv6 lookup racing a route replacement, a kernel race) is dropped,
//     never routed by the main table;
//   - in TABLE (TableMin..TableMax, 50000-50999) a default route with one
//     ECMP next hop per SLLBR pod (metric NextHopMetric) on the interface
//     that holds an address in the Gateway's subnets, and a blackhole
//     default (metric BlackholeMetric) behind it, so that VIP-sourced
//     traffic never leaves through the main table (the pod network).
//
// Promises:
//   - Ownership: an address is ours only if it carries IFA_PROTO Protocol
//     (kernel 5.18 or later, which NewNetlinkKernel checks with
//     ProbeAddressProtocol: older kernels drop the attribute silently and
//     are refused with a clear error); a rule only if it is a plain "from PREFIX
//     lookup TABLE" at RulePriority into our table range, or a plain "from
//     PREFIX blackhole" at DropRulePriority, with protocol Protocol; every route in our table range is ours. Apply changes
//     nothing else: foreign configuration in the way (a VIP address without
//     the marker, a foreign rule at our priority, a foreign rule before ours
//     that selects a VIP's traffic) is left as it is and reported as a
//     conflict. Ours but not desired is removed, so a restart with the
//     same input changes nothing and one with a smaller input cleans up
//     what a previous run left.
//   - No window without a route: a changed set of next hops replaces the
//     default route in one RTM_NEWROUTE with NLM_F_REPLACE; routes, then
//     rules, then addresses are added (a VIP becomes local only once its
//     replies have a route), and removed in the reverse order.
//   - A Gateway whose desired next hops of a family are empty (no SLLBR
//     pod ready) keeps the last ones in the kernel until new ones are
//     given. "Not ready" is not "not forwarding": an SLLBR pod is not ready
//     while it cannot reach the API server or during a rolling replacement,
//     and keeps forwarding; removing every next hop would drop the replies
//     of every connection, keeping them loses nothing that is not lost
//     anyway.
//   - Next hops a Gateway marks down (Gateway.Down: their BFD session with
//     the pod is down, internal/targetbfd) are left out of its route, in the
//     same single replacement, and reported (GatewayResult.Down); when every
//     next hop of a family is down, all of them stay (GatewayResult.AllDown):
//     liveness never leaves a family without a next hop.
//   - Next hops that are no longer used have their neighbour entries
//     flushed, so a new SLLBR pod taking over an address is resolved anew
//     (not those left out as down: still the same pod).
//   - Apply is idempotent, validates its whole input first (an invalid
//     Desired changes nothing), applies what it can when one object fails,
//     and reports every failure wrapped with its object.
//
// Loop runs Apply in the retrying pattern of the rest of sllbrd: only the
// latest configuration, retries with backoff, a periodic re-apply; Clear
// stops it applying (what was applied stays). It applies through a
// Configurer: an Applier over one kernel (the sidecar's, opened once with
// NewNetlinkKernel), or one that opens the pod's namespace for each apply
// (the node daemon, with DialNetlinkKernel after one probe at start).
package targetnet
