package main

import (
	"context"
	"fmt"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// The rigs. rigPath measures the whole path a client's datagram takes in
// the lab (client, gateway, the switch's bridges, lb1, the targets), where
// lb1's forwarding is a small part of each packet's cost. rigLB measures lb1
// alone, as a router is measured: the gateway sends prepared Ethernet
// frames through a packet socket straight into lb1 (BlastOptions.
// FromGateway), lb1 forwards them over a veth of its own to t1, which holds
// the three targets' addresses and drops and counts UDP at XDP in driver
// mode (lab.XDPSink); no bridge, no client stack, no gateway forwarding, no
// target stack. There, what lb1 spends per packet is most of the packet's
// cost, and a veth that has an XDP program in driver mode takes XDP frames,
// so sllbrd's XDP program can run in driver mode (--bpf-xdp driver).
const (
	rigPath = "path"
	rigLB   = "lb"
)

// lbSetups are rigLB's setups: unpinned (the packets are forwarded in the
// senders' softirq, on the senders' CPUs, whatever sllbrd's placement), plain
// kernel forwarding and each datapath that decides in the kernel: the
// kernel path, the eBPF datapath, and its XDP program in driver mode.
func lbSetups(senders, cpus int) []setup {
	return referToForwarding([]setup{
		{name: fmt.Sprintf("kernel, %d senders", senders), senders: senders},
		{name: "kernel path, unpinned", dataplane: dataplaneKernel, queues: cpus, fanout: true, senders: senders},
		{name: "bpf, unpinned", dataplane: dataplaneBPF, queues: cpus, fanout: true, senders: senders},
		{name: "bpf + XDP (driver), unpinned", dataplane: dataplaneBPF, xdpArgs: []string{"--bpf-xdp", "driver"}, queues: cpus, fanout: true, senders: senders},
	})
}

// sinkAllTargets gives t1 the addresses of targets 2 and 3 too (the
// manifests' Service has three), and the XDP sink on its link to lb1.
func (b *bench) sinkAllTargets(ctx context.Context) error {
	t1 := lab.TargetName(1)
	for _, i := range []int{2, 3} {
		a := lab.TargetAddrs(i)
		if out, err := b.lab.Exec(ctx, t1, "ip", "addr", "add", a.V4.String(), "dev", lab.TargetLink); err != nil {
			return fmt.Errorf("%s: address of target %d: %w: %s", t1, i, err, out)
		}
		if out, err := b.lab.Exec(ctx, t1, "ip", "-6", "addr", "add", a.V6.String(), "dev", lab.TargetLink, "nodad"); err != nil {
			return fmt.Errorf("%s: address of target %d: %w: %s", t1, i, err, out)
		}
	}
	if _, err := b.lab.InstallXDPSink(t1, lab.TargetLink); err != nil {
		return fmt.Errorf("%s: %w", t1, err)
	}
	return nil
}
