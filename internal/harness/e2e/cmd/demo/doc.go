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
package main
