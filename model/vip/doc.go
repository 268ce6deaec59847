// Package vip is the one rule of what may be a VIP, shared by every place
// that takes one: the L34Route CRD (its CEL rules say the same in CEL, and
// kube/api/v1alpha1's integration test holds them to Reserved), the
// translation of L34Routes (objects created before the CRD rule, or read
// by `sllbrd --manifests`), the controller before it writes a target pod's
// configuration, and `sllbrd target` when it reads one (kube/targetpod).
//
// A VIP is a host prefix (IPv4 /32 or IPv6 /128) of a unicast address that
// other hosts can reach: not in one of the Reserved ranges (unspecified,
// loopback, link-local, multicast, broadcast), not IPv4-mapped IPv6, no
// zone. Such an address on a target's lo or announced by the SLLBR pods
// could never work (the kernel drops a packet to 0.0.0.0/8 or from
// 127.0.0.0/8 as martian, link-local addresses are not routed, multicast
// and broadcast are not one host), and taking one would break the pod.
//
// Check and Parse return errors wrapping ErrNotVIP that name the address
// and the rule it breaks. The package has no dependencies outside the
// standard library, so that every role can use it.
package vip
