// Package model holds sllbrd's internal view of its configuration: plain Go
// values built on net/netip, with no Kubernetes, GoBGP or kernel types.
//
// The kube package translates cluster objects (or static manifest files) into
// a State; the dataplane, bgp and bfd packages consume it. A State is treated
// as immutable once published: producers build a new one for every change and
// consumers never modify what they receive.
//
// Validation of user input happens where it enters (kube); the types here only
// document the invariants that consumers may rely on.
package model
