// Command demo is `make demo`: it builds sllbrd, creates the network-namespace
// lab (a client, a DC gateway running BIRD, one LB, three targets), runs
// sllbrd on deploy/examples (the Meridio 2.x design's objects), sends TCP
// traffic to the VIPs and prints what happened, then removes everything it
// created. It needs root.
//
// `make demo DEMO=cluster` (or -scenario cluster) runs the whole system
// instead: kube-apiserver, `sllbrd controller`, SLLBR instances behind BIRD
// scaled 2 -> 3 -> 2, `sllbrd target` in every target, VIPs added and
// removed, targets deleted and added, with the time every API write takes
// to reach the traffic and what every process costs at rest. It is
// TestIntegrationCluster of cmd/sllbrd, whose log it prints.
//
// `make demo DEMO=node` runs sllbrd where users run it: a Kubernetes node
// on this host (kubelet, containerd, kube-proxy), deploy/ applied with
// kubectl and the image `make image` builds, the seed's objects and
// application, traffic from a client through BIRD, then scaling, deleted
// pods, rollouts, a killed leader, restarted kubelet and containerd, and a
// kubelet that refuses sllbrd's sysctls. It is TestIntegrationOnNode of
// internal/harness/e2e/onnode, whose log it prints.
package main
