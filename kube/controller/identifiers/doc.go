// Package identifiers assigns the endpoint identifiers of one Service: small
// integers 0..max-1 that every SLLBR instance reads from the same
// EndpointSlices, so that every instance builds the same Maglev table.
//
// It knows nothing of Kubernetes: callers pass the pods that count as
// endpoints (with their UID, name, creation time and addresses) and the
// claims they recovered from the EndpointSlices written before (never from
// memory), and get the assignment back. The rules, all pinned by the unit tests:
//
//   - One identifier per pod, not per address: a dual-stack pod has one
//     identifier for both its addresses; two pods never share one, whatever
//     their families. Claims are per pod (UID).
//   - One address, one pod: the dataplane maps each address to an
//     identifier, so when pods share an address (static IPAM, a rollout
//     whose new pod has the old one's address) one of them is listed and
//     the others are left out, in Assignment.Duplicates with the pod that
//     keeps the address and why: a pod that is not being deleted comes
//     first, then one that claims an identifier (it is listed with the
//     address already), then the older. A new pod that takes the address
//     of a terminating pod takes that pod's identifier too (before any
//     other handed-over one): the replacement of a pod that keeps its
//     address is listed exactly as the pod was.
//   - A pod keeps the identifier it claims for its whole life, as long as
//     the identifier lies in 0..max-1 and no older pod claims the same one
//     (claims can only collide if someone edited the slices by hand).
//   - A terminating pod (being deleted) keeps its identifier until a new
//     pod needs one: pods without a valid claim take over the identifiers
//     of terminating pods first, lowest first, and the terminating pod
//     leaves the slices. A terminating pod is not ready, so its flows went
//     to the others when it began terminating; its replacement (a
//     ReplicaSet creates it at once) then gets exactly those flows back and
//     every other flow stays where it was: the Maglev table is the one
//     before the deletion. With a fresh identifier instead, the table
//     would differ from it for good, and flows of pods that stay would
//     move too. A terminating pod never gets a new identifier.
//   - Pods without a valid claim then get the lowest free identifiers, the
//     oldest pod first (creation time, then name, then UID): pods that
//     arrive together are ordered the same way by every run.
//   - A pod for which no identifier is free is over the limit: it is left
//     out, reported in Assignment.OverLimit (oldest first), and gets the
//     next identifier that frees, before any younger pod.
//   - Assign is deterministic and does not modify its input.
package identifiers
