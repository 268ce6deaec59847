// Package harness holds what sllbrd's tests, `make demo`, `make bench-e2e`
// and `make node-up` are built from, and nothing that ships: the
// network-namespace lab (lab), running the real binary in it (e2e), a real
// kube-apiserver (kubetest) and its certificates (pki), a single-node
// Kubernetes cluster on the host (node) with its test-only stand-in for
// Multus (multinet) and the images it runs (images), the scenario that
// deploys sllbrd on that node (e2e/onnode), namespace switching for kernel
// tests (netns), route lookups under change (rtlookup), packet builders and
// pcap readers (testpkt), a parallel benchmark runner (parallel) and the
// soak's fault plan and judgement of its traffic (soak).
//
// Promise: no package linked into bin/sllbrd imports anything under
// internal/harness (internal/layering enforces it). Everything else under
// internal/ (metrics, reconcile, uplink, mountinfo) ships in the binary.
package harness
