// Package controller is `sllbrd controller`, the controller-manager of the
// Meridio 2.x design: in one namespace it owns the Gateways of sllbrd's
// GatewayClass and, for them,
//
//   - writes the EndpointSlices of their Services, with stable endpoint
//     identifiers, from the pods' Multus network-status (kube/controller/
//     endpoints, kube/controller/identifiers);
//   - writes the status of GatewayClasses, Gateways, L34Routes and
//     GatewayRouters (kube/controller/status);
//   - applies each Gateway's SLLBR Deployment (server-side apply, field
//     manager FieldManager: the fields it sets are its own, a change of
//     one of them by anyone else is reverted, everything else stays) from
//     an editable template and the Gateway's parameters
//     (kube/controller/sllbr), with
//     the controller's own image when the template names none (image.go:
//     read from its own pod when Run starts, WithImageFromPod);
//   - reports on the Gateway why its SLLBR pods do not start or become
//     ready (sllbrpods.go: the pods and ReplicaSets of its Deployment by
//     owner chain, never by labels; status.PodProblems);
//   - writes the desired network configuration of every endpoint pod of
//     the Gateways' Services into its kube.AnnotationTargetNetwork
//     annotation (targets.go, schema in kube/targetpod): per Gateway its
//     VIPs, the addresses of its ready SLLBR pods, a routing table kept
//     for the Gateway's life on the pod and, when a Service of the Gateway
//     selecting the pod has endpoint liveness probe bfd, the strictest BFD
//     timing of those (targets_liveness.go); only when it changes, by a merge
//     patch conditional on the resourceVersion read, removed when no
//     Gateway is left. What the target would refuse is left out
//     (target.Admit: one Gateway's fault never stops the pod's others) and
//     said on the pod (TargetNetworkPartial) and on each L34Route concerned
//     (TargetsConfigured, targets_leftout.go).
//
// Ownership: a Gateway is owned when its GatewayClass has spec.controllerName
// kube.ControllerName, or when its gatewayClassName is that string itself
// (the seed's form, which no GatewayClass can be named). A Gateway whose
// class does not exist gets Accepted=False/UnknownGatewayClass and nothing
// else changes for it (its slices and Deployment are kept as they are). A
// Gateway that is not owned loses what the controller wrote in its status
// and still owns by its managedFields (status.Written), and only that.
//
// Structure (kube-proxy / Kubernetes controller style): namespace-scoped
// informers (plus a cluster-wide one for GatewayClasses) turn every change
// into keys (kind, name) of one rate-limited work queue; workers reconcile
// one key at a time, idempotently, from the informers' caches, and write an
// object only when what they computed differs from it. Adding a reconciler
// means adding a kind, its reconcile function and the event handlers that
// produce its keys (see handlers.go).
//
// Promises:
//   - Nothing is written before every informer has synced and, with leader
//     election (the default), before this replica holds the Lease; only the
//     leader writes. On Run's context ending the workers stop first, then
//     the Lease is released, so another replica takes over within its retry
//     period. Losing the Lease ends Run with an error (the process restarts).
//   - Identifiers are recovered from the EndpointSlices every time, never
//     from memory: a restart or a new leader finds the same assignment. A
//     Service whose slices in the cache are older than what this replica
//     wrote is not reconciled until the cache has caught up, nor one whose
//     pods in the cache are older than its slices (endpoints.PodsBehind: a
//     new leader whose pod watch lags). Its slices are those with the
//     managed-by label and a controller reference to it by UID
//     (endpoints.Managed); a name taken by its own slice that the cache
//     does not show yet is waited for, someone else's is reported.
//   - The readiness hold (endpoints.Hold, hold.go; WithReadinessHold): an
//     endpoint listed ready stays ready while its pod is not ready only for
//     want of a probe result (a kubelet restart), decided from the objects;
//     the Service is requeued for the moment the hold expires, and a
//     container restart ends it at once (handlers.go).
//   - Every write is conditional on the version read (updates and applies
//     carry the resourceVersion, deletes a UID and resourceVersion precondition,
//     creates use deterministic names), so a decision made from a stale
//     cache fails and is retried instead of being written.
//   - A Gateway with invalid annotations or parameters keeps its last good
//     Deployment and its Services keep their last good slices; the problem
//     is in the Gateway's Accepted condition.
//   - A Gateway's Deployments are those it controls (owner reference UID);
//     its SLLBR pods those whose controller ReplicaSet its Deployment
//     controls (sllbr.PodOf). Labels only narrow the watches.
//   - No Deployment is written without an image: Run fails at start when
//     its own pod cannot be read, or when the template needs an image and
//     the controller has none; a template edited later to need one is an
//     invalid template.
//   - An endpoint is ready only once its pod's network configuration is
//     applied: by its Ready condition for a sidecar's pod, by the status
//     annotation's ready bit for a pod of the node daemon (no target-agent
//     annotation, or "node"), never for an unknown agent
//     (endpoints.Unapplied); a change of that bit reconciles its Services.
//   - Warning Events: on a pod that is selected but has no usable address
//     or whose address another endpoint has (once per distinct reason), or
//     that stays not ready for an invalid target-agent or status annotation
//     (endpoints.ListedFaults), on
//     a Service whose slice name someone else's slice has or whose
//     max-endpoints or endpoint-liveness annotation is invalid
//     (InvalidService; only the first keeps its slices as they were), on a
//     pod and its
//     Service when the pod is
//     past max-endpoints, on the Gateway for invalid parameters or template
//     and once per distinct problem of its SLLBR pods (SLLBR<kind>, related
//     to the pod), and on any object whose reconcile failed (ReconcileFailed).
package controller
