// Package netns runs code inside named network namespaces (those of
// `ip netns`, under /run/netns) and, for tests, creates throwaway ones.
//
// Do switches a dedicated, locked OS thread into the namespace and never
// returns that thread to the runtime, so no other goroutine ever runs in
// the namespace by accident; sockets fn creates stay in the namespace
// whatever goroutine uses them later.
//
// New and Run take a small TB interface (testing.TB satisfies it) so that
// tools can link this package without the testing package.
package netns
