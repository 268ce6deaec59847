// Package targetpod is the Kubernetes side of a target pod's network
// configuration (docs/target.md): the JSON schema of the two pod
// annotations, the controller's planning of the desired one, and the
// agent of `sllbrd target`, which follows its own pod and applies the
// desired annotation with internal/targetnet.
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
//     with foreign configuration and errors.
//
// Promises of the agent:
//   - It reads its pod with the verbs get and watch only (a watch
//     filtered by metadata.name) and writes with patch only, the status
//     annotation's key only.
//   - An invalid or unknown-version desired annotation changes nothing in
//     the namespace: the last valid configuration stays, the status and
//     /readyz say why (also when it is the first this container reads:
//     the status it writes replaces an earlier container's). A missing annotation removes what is ours. A
//     deleted pod object changes nothing (its connections drain).
//   - Ready (and Status.Ready) when the pod has a desired configuration
//     (unless WithRequireConfig(false)), its generation is applied
//     without error, and nothing foreign is in the way. Readiness is one
//     bit for the pod, not one per Gateway: a Gateway whose part fails
//     makes the pod NotReady for all (docs/target.md, "Readiness").
//   - The status annotation is written only when its value changes, and
//     removed when nothing is wanted and nothing of ours is left.
package targetpod
