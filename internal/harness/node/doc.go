// Package node runs a single-node Kubernetes cluster on this host for
// sllbrd's tests and for users trying it (`make node-up`, `make
// node-down`): etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler built from the Go module proxy (hack/kube-assets.sh),
// containerd and runc from Debian, the kubelet and kube-proxy (nftables
// mode), Debian's CNI plugins behind multinet (the test-only stand-in for
// Multus, internal/harness/multinet), and three host bridges: the pods'
// default network and the seed's two secondary networks (Networks).
//
// Promises:
//   - Up takes down whatever a previous node left (Down) before it starts,
//     so it works after a failure and twice in a row. It returns once the
//     Node is Ready, kube-proxy serves and the default namespace has its
//     ServiceAccount and root CA; on error the node stays for its logs.
//   - The daemons outlive the program that called Up (each in its own
//     session); they are known by PID files in Dirs.State, and a PID is
//     acted on only while it runs the daemon's executable with the node's
//     directories on its command line (a reused PID is left alone).
//   - Down removes everything Up made: pods (through the API, so that the
//     kubelet runs each one's CNI DEL), daemons, containerd's shims, the
//     pods' cgroups (cgroupParent), kube-proxy's nftables tables, every
//     mount under the directories, the bridges, the directories. A missing
//     node is no error.
//   - The host runs cgroup v1 (hybrid) without systemd: the kubelet and
//     containerd use the cgroupfs driver, the kubelet's failCgroupV1 is off,
//     containerd restricts oom_score_adj (root here lacks CAP_SYS_RESOURCE).
//   - kube-apiserver refuses privileged containers (--allow-privileged=false);
//     the kubelet allows sllbrd's unsafe sysctls (SLLBRSysctls) unless told
//     not to (Options.RefuseUnsafeSysctls, SetUnsafeSysctls).
//
// Nothing here is linked into sllbrd.
package node
