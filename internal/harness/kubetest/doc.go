// Package kubetest runs a real control plane for integration tests: etcd and
// kube-apiserver built by hack/kube-assets.sh, on loopback ports (or
// kube-apiserver on a chosen local address, StartAt), with static-token
// users and RBAC authorization. Kubeconfig writes a user's kubeconfig file
// for programs under test (sllbrd --kubeconfig); ServiceAccount names the
// user that RBAC bindings to a ServiceAccount apply to (a static token,
// bound to no pod). PodConfig authenticates with a real ServiceAccount
// token bound to a pod (TokenRequest), whose requests carry the pod's name
// and UID in their user extra, as the kubelet's projected tokens do.
//
// Promises:
//   - Start is an integration test's first step (internal/harness/require):
//     it skips the test when the binaries are missing, and in -short mode,
//     unless SLLBRD_REQUIRE_INTEGRATION is set (make test), in which case a
//     missing binary fails the test.
//     The binaries are looked up in $KUBEBUILDER_ASSETS, then in the cache
//     directory hack/kube-assets.sh writes to.
//   - Every process started is stopped (by PID) and every file removed when
//     the test ends, also when it fails.
//   - StopAPIServer/StartAPIServer restart kube-apiserver on the same address
//     with the same etcd, so clients reconnect to the same URL. The stop is
//     kube-apiserver's graceful termination (SIGTERM; open watches are
//     ended within 2 s), SIGKILL only if it has not exited after 15 s.
//   - Processes are forked from an OS thread that outlives them, so their
//     kill-on-parent-death signal fires only when the test process dies
//     (not when a test's goroutine that entered a namespace ends).
//   - Client.InstallCRDs (and InstallAllCRDs) returns once the CRDs are
//     established and the Client maps every served version of their kinds
//     (the API server lists a CRD in discovery a little after establishing
//     it), so objects of those kinds can be created right away; it waits
//     at most 60 s (and ctx) for discovery, and its error names the kinds
//     still missing.
//   - The serving certificate covers 127.0.0.1, ::1, localhost and the
//     address given to StartAt.
package kubetest
