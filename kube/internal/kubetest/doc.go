// Package kubetest runs a real control plane for integration tests: etcd and
// kube-apiserver built by hack/kube-assets.sh, on loopback ports, with
// static-token users and RBAC authorization.
//
// Promises:
//   - Start skips the test when the binaries are missing, unless the
//     environment variable SLLBRD_REQUIRE_KUBE is set, in which case it fails;
//     without that variable it also skips in -short mode.
//     The binaries are looked up in $KUBEBUILDER_ASSETS, then in the cache
//     directory hack/kube-assets.sh writes to.
//   - Every process started is stopped (by PID) and every file removed when
//     the test ends, also when it fails.
//   - StopAPIServer/StartAPIServer restart kube-apiserver on the same address
//     with the same etcd, so clients reconnect to the same URL.
package kubetest
