// Command node brings the single-node Kubernetes cluster of `make node-up`
// up and down (internal/harness/node).
//
//	node up -bin DIR [-refuse-unsafe-sysctls]   bring a node up (after taking any old one down)
//	node down                                         take it down
//	node status                                       the daemons and the Node's condition
package main
