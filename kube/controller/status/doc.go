// Package status computes the status the controller writes on GatewayClasses,
// Gateways, L34Routes and GatewayRouters, from plain findings (problems
// found by kube/translate, what kube/targetpod.Admit leaves out of pods, the SLLBR Deployment's replicas, its pods and
// ReplicaSets, whose owner chain the caller checked). It performs no
// API calls; Merge* functions fold the result into an object's current
// status the way the Gateway API asks: conditions of other types and status
// entries of other controllers are kept, a condition keeps its
// lastTransitionTime while its status does not change, and every condition
// carries the observedGeneration it was computed from. A Gateway that left
// the controller's class loses what the controller wrote: Written reads
// from the Gateway's managedFields which conditions (by the message's
// owner) and whether the addresses its field manager still owns, Without
// removes them; what another controller wrote since is its own and stays.
//
// Conditions and reasons (documented for users in docs/controller.md):
//   - GatewayClass Accepted: True/Accepted; False/InvalidParameters when the
//     class has a parametersRef (sllbrd reads parameters per Gateway only).
//   - Gateway Accepted: True/Accepted; False/UnknownGatewayClass,
//     False/InvalidAnnotations (meridio-experiment/networks or
//     network-subnets), False/InvalidParameters (parametersRef).
//   - Gateway Programmed: True/Programmed when at least one SLLBR replica is
//     ready; False/NoReadyReplicas, False/InvalidTemplate,
//     False/DeploymentConflict (the name is taken by a Deployment the
//     controller does not own) or False/Pending (not created yet). The
//     message adds the first PodProblems: why SLLBR pods do not start or
//     become ready (their ReplicaSet cannot create them, their node refused
//     them, no node takes them, a container cannot pull, be created or keeps
//     failing), each one bounded line, with what to change on the kubelet
//     for SysctlForbidden.
//   - Gateway status.addresses: the VIPs of the L34Routes the Gateway
//     accepted, sorted (IPv4 first), type IPAddress, at most 16 (the
//     Gateway API's limit; the Programmed message says when VIPs are left
//     out).
//   - L34Route status.parents[] (one entry per parentRef naming an owned
//     Gateway, controllerName meridio-experiment/stateless-load-balancer):
//     Accepted True/Accepted or False/UnsupportedValue; ResolvedRefs
//     True/ResolvedRefs or False/BackendNotFound, InvalidKind,
//     RefNotPermitted; TargetsConfigured True/TargetsConfigured,
//     False/NotAccepted, or False with the reason of what kube/targetpod.Admit
//     left out of target pods' configurations (VIPConflict, TargetLimit,
//     TargetRefused), the pods grouped per problem (RouteTargetsCondition).
//   - GatewayRouter Accepted: True/Accepted or False/Invalid.
package status
