// Package endpoints computes the EndpointSlices of one Service of an owned
// Gateway: which pods count as endpoints and with which addresses (from
// Multus' network-status annotation), the identifiers recovered from the
// slices written before, and the slices to create, update and delete. It
// performs no API calls: the controller lists, calls Plan and writes.
//
// Promises:
//   - A pod counts once it has an address on one of the Gateway's networks
//     inside one of its network-subnets, and while its phase is neither
//     Succeeded nor Failed. The addresses come only from network-status
//     entries whose name is a network of the Gateway's
//     meridio-experiment/networks (either as written there, or prefixed by
//     the pod's namespace as Multus names them); entries marked default
//     (the pod network) and the pod's primary IP are never used. One address
//     per family: the lowest of the pod's candidates.
//   - Conditions: ready = the pod's Ready condition is true, its network
//     configuration is applied, and the pod is not being deleted; serving
//     = the same but for the deletion; terminating = it is being deleted.
//     A pod being deleted stays listed until the object is gone.
//   - Applied (Unapplied, agent.go), by the pod's
//     meridio-experiment/target-agent: "sidecar": always (the sidecar's
//     readiness probe holds the Ready condition until it is); absent or
//     "node": when the node daemon's target-network-status says ready (its
//     ready bit alone); any other value: never, with
//     FaultInvalidTargetAgent (Candidate.Fault; an unreadable status:
//     FaultInvalidTargetNetworkStatus). Such a pod is listed, not ready,
//     and keeps its identifier. NextHops (the SLLBR pods, which no agent
//     configures) leaves this out.
//   - The readiness hold (Hold, hold.go): an endpoint its slices list ready
//     stays ready (and serving) while its pod is not ready only for want of
//     a probe result, as after a kubelet restart: Ready False since T, no
//     container restarted since T, now < T + the pod's longest readiness
//     probe time + HoldMargin (at most the cap), and its network
//     configuration applied. Decided from the pod and the slices alone,
//     never from memory.
//   - One slice per address family, named <service>-ipv4 and <service>-ipv6
//     (<service>-ipv4-2 and so on when a family has more than
//     MaxEndpointsPerSlice endpoints; an endpoint stays in the slice it is
//     in while that slice has room); labelled kubernetes.io/service-name
//     and endpointslice.kubernetes.io/managed-by=sllbrd-controller.meridio-experiment,
//     owned by the Service, with the meridio-experiment/endpoint-identifiers
//     annotation exactly as the dataplane reads it. Empty slices are deleted.
//   - Plan writes nothing that is already there: an unchanged slice is
//     neither updated nor re-created, whatever order the informer returned
//     things in.
package endpoints
