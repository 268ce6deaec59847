// Package lab builds the network-namespace laboratory that sllbrd's
// end-to-end tests, `make demo` and `make bench-e2e` use: a client, a DC
// gateway, one to three load-balancer namespaces and N targets, wired through
// bridges in a switch namespace, dual-stack (IPv4 and IPv6) everywhere.
//
//	cl (eth0) ── (client) gw (vlan-100) ── sw:bridge vlan-100 ── (vlan-100) lbI (net1) ── sw:bridge net1 ── (net1) tI
//
// Addresses are fixed (see topology.go): client 10.100.0.2/24 and
// fd00:100::2/64; gateway 169.254.100.150/24 and fd00:169::150/64 towards
// the LBs; lbI 169.254.100.I and fd00:169::I on vlan-100, 169.111.100.I and
// fd00:111::I on net1; target tI 169.111.100.(10+I) and fd00:111::(10+I) on
// net1 with the VIPs on lo and "from VIP lookup 100" routed back via the LBs
// (or, with Options.TargetsWithoutVIPs, net1 only: `sllbrd target` adds
// the rest).
//
// Promises:
//   - Every namespace is named "sllbrd-lab-<run id>-<node>" with a random
//     run id, so parallel runs and leftovers never collide. Close kills the
//     processes the lab started (by PID) and deletes every namespace it
//     created (by name), also after a partial New; labctl down removes
//     leftovers of a killed run.
//   - Code runs inside a namespace in two ways: commands through
//     `ip netns exec` (Exec, Start), and Go sockets created on a locked OS
//     thread that entered the namespace with setns and then dies (the thread
//     is never returned to the Go scheduler, so no other goroutine ever runs
//     in the wrong namespace). Sockets keep the namespace they were made in.
//   - Each target runs one labresponder process (built with `go build` on
//     first use unless Options.ResponderBinary names one).
//   - Every traffic generator is bounded in count and time.
//   - Children are forked from one OS thread locked for the lab's life and
//     get SIGKILL when the lab's process dies (unless Options.Detach).
//   - Kernel ECMP (baseline, targets' return routes) hashes the 5-tuple with
//     fib_multipath_hash_policy 3: policy 1 would reuse the sending socket's
//     random skb hash, which veth carries across namespaces, so one 5-tuple
//     from two sockets could take two paths.
//
// Typical use (tests): l, err := lab.New(ctx, lab.Options{Logger: t});
// t.Cleanup(func() { l.Close() }); l.Baseline or start sllbrd in "lb1" with
// l.Start; l.Flows to check where flows land; l.Blast to measure packet
// rates; ReadProcStats for a process's CPU and RSS, ReadMemStats for its
// anonymous, file-backed and proportional memory. BIRD (StartBIRD) and the
// baseline's static gateway routes are alternatives: use one or the other.
//
// ConnectHost links the test process's own namespace to a node with a veth
// pair (e.g. so that sllbrd in lb1 reaches a kube-apiserver the test runs);
// DisconnectHost removes it. ConnectManagement does the same for several
// nodes at once through a bridge (the pod network of a cluster).
//
// InstallVIPCounters counts, with nftables in an LB, what it forwards to and
// from the VIPs; OpenStreams keeps long-lived TCP connections exchanging
// data with the targets' echo ports (Options.EchoPorts), so that a test can
// count the connections a change breaks (and, with StallAfter, when each
// exchange was slow and when each connection broke).
//
// InstallXDPSink counts and drops UDP at an interface's XDP hook (driver
// mode), so that a benchmark's receiver costs next to nothing and the load
// balancer is the bottleneck; Close detaches every sink left, and a blast
// counts what a target's sink dropped. With Options.PointToPoint the
// gateway, lb1 and t1 are linked by veth pairs of their own (no bridge), and
// BlastOptions.FromGateway sends the blast as Ethernet frames from the
// gateway's packet socket straight to lb1: with a sink on t1, lb1 is nearly
// all of a packet's cost, as a router is measured.
//
// StartProbes sends steady, bounded probe traffic from the client to VIPs
// and reports every probe's outcome: fixed UDP flows, new TCP connections,
// fragmented UDP, ICMP echo and SCTP INITs, both families, one loop per kind
// and VIP (per flow for UDP), none held longer than the probe timeout. Every
// reply is checked: the responder's reply must name the client's own
// address and port (no NAT), an echo reply its identifier, sequence number
// and data, the target kernel's ICMP error for an INIT (this kernel has no
// SCTP) must come from the VIP and quote that INIT. Targets send ICMP
// errors without the per-destination rate limit, for those answers.
//
// Baseline programs plain kernel forwarding (no sllbrd) so the lab can be
// proven and its packet rate measured as the reference for sllbrd.
package lab
