// Command benche2e is `make bench-e2e`: it measures sllbrd end to end in
// the network-namespace lab (client -> gateway -> lb1 -> 3 targets, 64-byte
// UDP frames) against plain kernel forwarding in the same lab and run.
//
// It builds sllbrd, builds a lab, and then, for a few rounds, alternates a
// bounded blast through plain kernel forwarding (ECMP in lb1) with the same
// blast through sllbrd in lb1, in two placements: NFQLB's (one sender on
// CPU 0, sllbrd with one queue pinned to CPU 1) and an unpinned one (a
// sender per CPU, sllbrd with a queue per CPU spread by CPU). For sllbrd it records the received rate, loss, CPU time per packet
// (utime and stime from /proc), RSS and its own nfqueue metrics. It then
// finds the highest offered rate sllbrd carries with less than 0.1% loss
// and, when perf(1) works, profiles sllbrd during a blast. It prints one
// table with medians and spreads and the ratio sllbrd/kernel, compared with
// the ratio measured for NFQLB, the C load balancer sllbrd replaces.
//
// Promises: it needs root and runs from the module root with no
// arguments; every blast is bounded (seconds) and the whole run is bounded
// by -timeout (default 4m30s); the lab (namespaces, processes) is removed
// on every exit path, Ctrl-C included. It changes nothing outside the lab
// and its temporary directories.
package main
