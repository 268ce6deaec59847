// Package identifiers assigns the endpoint identifiers of one Service: small
// integers 0..max-1 that every SLLBR instance reads from the same
// EndpointSlices, so that every instance builds the same Maglev table.
//
// It knows nothing of Kubernetes: callers pass the pods that count as
// endpoints (with their UID, name and creation time) and the claims they
// recovered from the EndpointSlices written before (never from memory), and
// get the assignment back. The rules, all pinned by the unit tests:
//
//   - One identifier per pod, not per address: a dual-stack pod has one
//     identifier for both its addresses; two pods never share one, whatever
//     their families.
//   - A pod keeps the identifier it claims for its whole life, as long as
//     the identifier lies in 0..max-1 and no older pod claims the same one
//     (claims can only collide if someone edited the slices by hand).
//   - Pods without a valid claim get the lowest free identifiers, the oldest
//     pod first (creation time, then name, then UID): pods that arrive
//     together are ordered the same way by every run.
//   - A pod for which no identifier is free is over the limit: it is left
//     out, reported in Assignment.OverLimit (oldest first), and gets the
//     next identifier that frees, before any younger pod.
//   - Assign is deterministic and does not modify its input.
package identifiers
