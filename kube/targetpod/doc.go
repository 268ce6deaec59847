// Package targetpod is the Kubernetes side of a target pod's network
// configuration (docs/target.md): the JSON schema of the two pod
// annotations, the controller's planning of the desired one, and the
// per-pod agent that applies it with internal/targetnet: PodAgent, fed the
// pod's versions by the sidecar's Agent (`sllbrd target --pod`, WatchPod)
// or by the node daemon (kube/targetnode, an informer).
//
//   - kube.AnnotationTargetNetwork (meridio-experiment/target-network),
//     written by the controller: Desired, version SchemaVersion (1), per
//     Gateway its VIPs, the addresses of its ready SLLBR pods per family,
//     its network-subnets and the pod's routing table for it. Next keeps
//     a Gateway's table for its whole life on the pod, gives a new one the
//     lowest free table of targetnet.TableMin..TableMax, and increases the
//     generation only when the content changes.
//   - Desired.Validate is the one check of a configuration, on both sides:
//     ParseDesired (the agent) applies nothing that fails it, and the
//     controller writes nothing that fails it. Admit is how the controller
//     gets there: from each Gateway's Candidate entry (its VIPs with the
//     L34Route and creation time of each) it keeps what passes together and
//     returns the rest as Rejections naming the objects (a VIP of two
//     Gateways stays with the oldest route; past a limit, the youngest
//     routes or newest Gateways go; an entry that fails alone goes whole).
//   - kube.AnnotationTargetNetworkStatus
//     (meridio-experiment/target-network-status), written by the agent:
//     Status, the generation applied and what the kernel holds, conflicts
//     with foreign configuration and errors, and which agent wrote it
//     (SidecarAgent "sidecar" or NodeAgent "node/<node>").
//
// Exactly one agent per pod (kube.AnnotationTargetAgent, read by
// AgentMode): the sidecar applies only in a pod marked
// kube.TargetAgentSidecar, the node daemon only in one that is not (absent
// or kube.TargetAgentNode) and not hostNetwork; any other value: neither.
// An agent whose pod is not its own applies nothing (its loop is cleared,
// no resync either), leaves in place what it applied before the mark
// changed, and is not ready; it says why and what to do in Ready and, where
// no other agent has written, in the status (a node daemon stays silent in
// a sidecar's pod).
//
// Promises of the agents:
//   - The sidecar reads its pod with the verbs get and watch only (a watch
//     filtered by metadata.name); both write with patch only, the status
//     annotation's key only (PatchStatus).
//   - An invalid or unknown-version desired annotation changes nothing in
//     the namespace: the last valid configuration stays, the status and
//     Ready say why (also when it is the first this agent reads: the status
//     it writes replaces an earlier agent's). A missing annotation removes
//     what is ours. A deleted pod object changes nothing (its connections
//     drain).
//   - Ready (/readyz) when the pod has a desired configuration (unless
//     WithRequireConfig(false)), its generation is applied without error,
//     and nothing foreign is in the way. Readiness is one bit for the pod,
//     not one per Gateway: a Gateway whose part fails makes the pod
//     NotReady for all (docs/target.md, "Readiness").
//   - The status describes the last apply outcome: it is written when an
//     outcome, a parse problem or a refusal changes it, never between a new
//     generation being read and its outcome (no transient ready: false;
//     the controller gates node-mode endpoints on it). It is written only
//     when its value changes, and removed when nothing is wanted and
//     nothing of ours is left, but only if this agent wrote it.
//   - With WithLiveness, after each apply of the generation last read, the
//     agent hands its Liveness (internal/targetbfd.Runner, or the node
//     daemon's per pod) that generation's Gateways whose Liveness is set,
//     each with the next hops and interfaces the kernel holds (and those
//     left out as down): the BFD sessions the SLLBRs' probe=bfd needs
//     follow what is routed. An apply that read nothing changes none; a pod
//     that is not the agent's gets none.
//   - The next hops its Liveness finds down are left out of the routes of
//     the Gateways with Liveness (never every one of a family: then all
//     stay), the same generation applied again through the one loop each
//     time that set changes (coalesced like every Set); the status lists
//     them apart from the next hops in the kernel (downNextHops,
//     allNextHopsDown) and the pod stays ready.
//   - A Configurer error wrapping ErrNoNamespace (the node daemon found no
//     ready sandbox) is not a failure: nothing is written or counted, it is
//     logged once, and retried with the loop's backoff and on every change
//     of the pod.
package targetpod
