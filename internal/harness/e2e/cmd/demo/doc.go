// Command demo is `make demo`: it builds sllbrd, creates the network-namespace
// lab (a client, a DC gateway running BIRD, one LB, three targets), runs
// sllbrd on deploy/examples (the Meridio 2.x design's objects), sends TCP
// traffic to the VIPs and prints what happened, then removes everything it
// created. It needs root.
package main
