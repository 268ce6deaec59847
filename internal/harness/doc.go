// Package harness holds what sllbrd's tests, `make demo` and `make bench-e2e`
// are built from, and nothing that ships: the network-namespace lab (lab),
// running the real binary in it (e2e), a real kube-apiserver (kubetest),
// namespace switching for kernel tests (netns), route lookups under change
// (rtlookup), packet builders and pcap readers (testpkt) and a parallel
// benchmark runner (parallel).
//
// Promise: no package linked into bin/sllbrd imports anything under
// internal/harness (internal/layering enforces it). Everything else under
// internal/ (metrics, reconcile, uplink) ships in the binary.
package harness
