// Package targetnode is the node daemon of `sllbrd target --node NAME`
// (docs/target.md): one per node (a DaemonSet), the agent of every pod of
// its node that is not marked for the sidecar, so that applications need
// no sidecar. Per pod it runs the same agent as the sidecar
// (targetpod.PodAgent: desired annotation -> targetnet.Loop -> status
// annotation), fed by the daemon's informer and applying through the pod's
// namespace opened for each apply.
//
// What it reads and writes:
//   - One informer on pods, filtered by the field selector
//     spec.nodeName=NAME (the verbs list and watch; no other read), its
//     cache reduced to each pod's identity, the three target annotations,
//     node, hostNetwork and phase.
//   - The status annotation only, by JSON merge patch of that key
//     (targetpod.PatchStatus), with Status.Agent "node/NAME".
//   - A pod's network namespace: found through NetNS (internal/cri, the
//     runtime's CRI API) for each apply, as a sandbox can be re-created
//     with a new namespace; the file is checked (a network namespace, not
//     the daemon's own), rtnetlink sockets are created in it
//     (targetnet.DialNetlinkKernel: on a locked thread that returns to the
//     daemon's namespace), and the sockets and the file are closed after
//     the apply, since either keeps the namespace, and with it a dead pod's
//     interfaces, alive. The kernel's IFA_PROTO support is checked once, by
//     the caller, before New.
//   - The pod's BFD sessions (the target side of the SLLBRs' probe=bfd
//     liveness probe, internal/targetbfd), when the configuration applied
//     asks for them: one targetbfd.Runner per pod, whose server runs on a
//     thread that stays in the pod's namespace (the one exception to the
//     above: it keeps the namespace alive while it runs). It is stopped,
//     its sessions AdminDown, when the pod's agent stops (the pod deleted,
//     finished, marked for the sidecar), when liveness goes, and when an
//     apply finds no namespace; it is started anew when an apply finds
//     another namespace (a re-created sandbox). A namespace that cannot be
//     opened for it is logged, counted and tried again at the next apply.
//     The daemon is not frozen with a pod: its sessions find a dead node or
//     network, not a frozen application (docs/target.md).
//
// Which pods: those of the node with a desired or status annotation, not
// Succeeded or Failed, whose kube.AnnotationTargetAgent is absent or
// "node" (the pod's agent: it applies and always writes its status, and
// removes only its own), or another unknown value (an agent that applies
// nothing and says why where no other agent wrote). A pod marked "sidecar"
// has no agent here; one that gets the mark while followed is left with
// what was applied, nothing written. A hostNetwork pod is never configured
// (it would configure the node): its status says so, and the runtime's
// own answer (cri.ErrHostNetwork) is refused too.
//
// Promises:
//   - The pod's agent as the sidecar's (targetpod): idempotent applies,
//     foreign configuration reported and left alone, no window without a
//     route, a repair every WithResync (30 s), no transient ready: false
//     across generations (the controller lists a node-mode pod as a ready
//     endpoint only while its status says ready).
//   - Restart-safe: a new daemon changes nothing in a pod's namespace that
//     holds its configuration, and writes no status that is already there.
//   - A pod without a ready sandbox (cri.ErrNoSandbox: the pod is going
//     away or its sandbox is being re-created) is skipped quietly: no
//     status write, one log line, retried with the loop's backoff (100 ms
//     doubling to 10 s) and at once on every change of the pod, so a
//     re-created sandbox is configured when it is ready. A pod deleted from
//     the API: its agent stops, nothing is changed.
//   - Bounded work: at most DefaultApplies applies at a time, status
//     writes at most DefaultWritesPerSecond (burst DefaultWriteBurst), at
//     most DefaultWritesInFlight at a time (WithLimits).
//   - Ready when the informer has listed the node's pods and the runtime
//     answers (a probe every 10 s: a pod UID nobody has must come back as
//     cri.ErrNoSandbox).
//   - Cleanup (uninstall, instead of Run): an empty configuration applied
//     to every node-mode pod of the node with a target annotation (nothing
//     in sidecar, unknown-mode or hostNetwork pods), every status
//     annotation a node daemon wrote on the node's pods removed (where it
//     applied, only once the namespace is clean), one log line per pod,
//     then idle until stopped; Ready once done without failure. It reads
//     the node's pods with one list (field selector), no watch.
//   - Metrics (WithMetrics, internal/metrics.Target): every apply and
//     status write counted; the gauges sum the last result of each pod of
//     the node; the applied generation is one pod's, meaningless here, and
//     not exported (internal/metrics.TargetNode). The node's own, read at
//     scrape time: PodStates (each followed pod in exactly one state:
//     applied, not_ready, no_sandbox, refused; a pod no longer followed in
//     none), RuntimeUp (the last runtime probe answered),
//     NamespaceUnavailable (applies skipped for want of a namespace) and
//     BFDStats (every pod's BFD sessions summed, with counts that only
//     grow: internal/metrics.TargetBFD).
package targetnode
