// Package layering holds no code: its test enforces the dependency direction
// of DESIGN.md over the whole module.
//
//   - dataplane (and its subpackages), maglev and bfd never depend on
//     Kubernetes (k8s.io, sigs.k8s.io), GoBGP, kube or bgp;
//   - bgp and bfd never depend on each other (cmd/sllbrd wires them);
//   - internal/admin (the admin socket) depends on none of Kubernetes,
//     GoBGP, bgp, bfd or dataplane: sllbrd fills its result types;
//   - model and maglev depend on the standard library only (model may use
//     nothing but the standard library, so every package can share it);
//   - internal/targetnet (the target pod's side) knows netlink and plain
//     types only, and internal/tableroute (the default routes it shares
//     with dataplane/route) not even those of sllbrd; internal/targetbfd
//     (the target side's BFD sessions) knows package bfd and plain types;
//   - nothing that ships in bin/sllbrd depends on internal/harness (the lab,
//     e2e, kubetest, netns and testpkt helpers of the tests).
package layering
