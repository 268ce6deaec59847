// Package cri is the node daemon's only view of the container runtime: a
// small client of the Kubernetes Container Runtime Interface (CRI v1,
// k8s.io/cri-api) over the runtime's unix socket, which answers one
// question: which network namespace does a pod of this node live in now?
//
// What it asks the runtime, and nothing else (read-only calls):
//   - Version: the runtime's name and version (Client.Version), for a startup
//     log line and to fail fast when the socket is wrong.
//   - ListPodSandbox filtered by the label io.kubernetes.pod.uid=<pod UID>
//     (the kubelet puts it on every sandbox it creates) and state
//     SANDBOX_READY; the newest one (CreatedAt) wins, since a re-created
//     sandbox can briefly overlap its predecessor.
//   - PodSandboxStatus(verbose) of that sandbox: the path of its network
//     namespace is in the verbose map under "info", a JSON document whose
//     runtimeSpec.linux.namespaces[] entry of type "network" names it.
//     containerd (1.6, 1.7, 2.x) and CRI-O both put the OCI runtime spec
//     there under that key; containerd also says netNamespaceClosed. A
//     runtime that does not is refused with an error, never guessed around:
//     nothing here looks in /proc.
//
// Answers are checked, never trusted: the sandbox must carry the pod's UID
// (label and metadata) and be READY in both answers, its network namespace
// mode must be POD, and the path must be absolute, clean and non-empty, the
// only network entry of the spec.
//
// Errors (all wrapped; test with errors.Is):
//   - ErrNoSandbox: the pod has no ready sandbox on this node (the pod is
//     gone or not started, its sandbox stopped or was removed while asked,
//     its namespace closed). The caller skips the pod; there is nothing to
//     configure and nothing to retry until the pod changes.
//   - ErrHostNetwork: the sandbox runs in the node's network namespace
//     (hostNetwork: true, mode NODE). The caller must never configure it: it
//     is the host's.
//   - anything else: the runtime did not answer in time (every call is
//     bounded, callTimeout) or answered something unusable; the message says
//     which. The caller may retry later.
//
// PodNetNS is resolved per use: a sandbox can be re-created with a new
// namespace, so callers must not cache the path. The path names a
// namespace the runtime keeps bind-mounted while the sandbox lives; the
// caller opens it (and should check that what it opened is not its own
// namespace) and closes it after use, since an open descriptor keeps a dead
// pod's namespace, with its interfaces and addresses, alive.
//
// A VM-based sandbox (Kata and the like) also reports a host network
// namespace, but the pod's interfaces live in the guest: such runtimes are
// not supported and not detected.
package cri
