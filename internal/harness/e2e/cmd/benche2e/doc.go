// Command benche2e is `make bench-e2e`: it measures sllbrd end to end in
// the network-namespace lab (client -> gateway -> lb1 -> 3 targets, 64-byte
// UDP frames) against plain kernel forwarding in the same run.
//
// It builds sllbrd, builds two identical labs, and then, for a few rounds,
// alternates a bounded blast through plain kernel forwarding (ECMP in lb1
// of the reference lab, where sllbrd never runs: once a policy rule has
// been added to a namespace, IPv4 looks every packet up through the rules
// for the namespace's life) with the same blast through sllbrd in lb1 of
// the other, with its three dataplanes (--dataplane
// nfqueue: every packet decided in userspace; --dataplane kernel: decided
// by nftables rules, fragments and ICMP errors in userspace; --dataplane
// bpf: decided and forwarded by an eBPF program on the routers' interface,
// the rest as kernel), in two placements: NFQLB's (one sender on CPU 0,
// sllbrd pinned to CPU 1) and an unpinned one (a sender per CPU, sllbrd
// with a queue per CPU spread by CPU), and the kernel path with 10% of the
// flows fragmented (the mixed case). In both placements it also measures
// the nftables floor (floor.go): the least any nftables Maglev decision
// does, one rule and one map lookup setting the mark, with policy routing,
// and no sllbrd. It records the received rate, loss, the machine's CPU
// time per packet (/proc/stat) and, for sllbrd, its own CPU time, RSS and
// nfqueue metrics; with the eBPF datapath it also checks, on every blast,
// that the program forwarded about every packet delivered
// (sllbrd_bpf_packets_total{action="redirect"}), and fails the run when it
// did not: the blast measured another path. It then finds the highest
// offered rate each unpinned setup (kernel forwarding, nfqueue, kernel
// path, eBPF) carries with less than 0.1% loss and, when perf(1) works,
// profiles every CPU during a blast through each and the floor, three
// times in turn (-profile-rounds), keeping the packet path's tasks, and
// reports their CPU time per datagram with the ratio to forwarding it
// implies, and the share of their samples in the decision (netfilter,
// nf_tables, jhash, policy rules; the eBPF program's own code) with the
// ratio to forwarding it implies. It prints one table with medians and
// spreads, the ratios sllbrd/kernel forwarding, kernel path/nfqueue and
// eBPF/kernel path, compared with their goals (NFQLB's share for nfqueue,
// 0.95 of kernel forwarding and 2x nfqueue for the kernel path, 1.3x
// forwarding unpinned for the eBPF datapath, 2x for its XDP variant, a
// setup with xdpArgs; the floor is held to the kernel path's).
//
// With -rig lb (`make bench-lb`, lb.go) it measures lb1 alone, as a router
// is measured: the gateway sends prepared frames through a packet socket
// straight into lb1 over a veth of their own, lb1 forwards over another to
// t1, which holds the three targets' addresses and drops and counts UDP at
// XDP in driver mode; the setups are plain forwarding, the kernel path, the
// eBPF datapath and its XDP program in driver mode, unpinned. Each round
// also measures the rig's own cost (the blast dropped at lb1's XDP) and the
// report gives each setup's ratio to forwarding beyond it.
//
// Promises: it needs root and runs from the module root with no
// arguments; every blast is bounded (seconds) and the whole run is bounded
// by -timeout (default 9m); the lab (namespaces, processes) is removed on
// every exit path, Ctrl-C included. It changes nothing outside the lab
// and its temporary directories.
package main
