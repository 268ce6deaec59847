// Package e2e runs the real sllbrd binary in the network-namespace lab
// (internal/harness/lab): it builds the binary, writes manifests, starts instances
// in LB namespaces and reads their admin endpoint from inside the namespace.
// The integration tests of cmd/sllbrd, `make demo` and `make bench-e2e` use
// it; it is never part of sllbrd itself.
package e2e
