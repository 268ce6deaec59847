package main

import (
	"context"
	"fmt"
	"io"
	"time"

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
func sinkAllTargets(ctx context.Context, l *lab.Lab) error {
	t1 := lab.TargetName(1)
	for _, i := range []int{2, 3} {
		a := lab.TargetAddrs(i)
		if out, err := l.Exec(ctx, t1, "ip", "addr", "add", a.V4.String(), "dev", lab.TargetLink); err != nil {
			return fmt.Errorf("%s: address of target %d: %w: %s", t1, i, err, out)
		}
		if out, err := l.Exec(ctx, t1, "ip", "-6", "addr", "add", a.V6.String(), "dev", lab.TargetLink, "nodad"); err != nil {
			return fmt.Errorf("%s: address of target %d: %w: %s", t1, i, err, out)
		}
	}
	if _, err := l.InstallXDPSink(t1, lab.TargetLink); err != nil {
		return fmt.Errorf("%s: %w", t1, err)
	}
	return nil
}

// measureRigCost blasts, once per round, into an XDP sink on lb1's link to
// the gateway: the rig's own cost per packet (the sender's packet socket,
// the veth, lb1's receive up to XDP), what no forwarding in lb1 can go below
// and every setup pays. It is charged per packet sent: frames the veth's
// receive ring dropped cost the sender all the same.
func (b *bench) measureRigCost(ctx context.Context, senders int) (sample, error) {
	var smp sample
	if err := b.placeClient(setup{senders: senders}); err != nil {
		return smp, err
	}
	sink, err := b.lab.InstallXDPSink(lab.LBName(1), lab.GatewayLink)
	if err != nil {
		return smp, fmt.Errorf("the rig's cost: %w", err)
	}
	defer sink.Close()
	busy0, err := readBusy()
	if err != nil {
		return smp, err
	}
	if smp.blast, err = b.lab.Blast(ctx, b.blastOptions(setup{senders: senders}, 0)); err != nil {
		return smp, fmt.Errorf("the rig's cost: %w", err)
	}
	busy1, err := readBusy()
	smp.machine = busy1 - busy0
	if err != nil {
		return smp, err
	}
	if smp.blast.Received == 0 {
		return smp, fmt.Errorf("the rig's cost: lb1's sink counted nothing: %v", smp.blast)
	}
	return smp, sink.Close()
}

// rigCostPerPacket is the machine's CPU time per packet sent of a rig cost
// sample.
func rigCostPerPacket(s sample) time.Duration { return perPacket(s.machine, s.blast.Sent) }

// writeRigCost prints the rig's own cost and, for every sllbrd setup, the
// ratio of forwarding's cost beyond it to the setup's, round by round (by
// the machine's CPU time per packet received): the ratio to forwarding of
// what lb1 itself spends, where the rig's share no longer dilutes it (an
// estimate from CPU time: no verdict).
func (r *report) writeRigCost(w io.Writer) {
	if len(r.rigCost) == 0 {
		return
	}
	rate := column(r.rigCost, func(x sample) float64 { return x.blast.SentPPS() })
	cost := column(r.rigCost, func(x sample) float64 { return float64(rigCostPerPacket(x).Nanoseconds()) })
	fmt.Fprintf(w, "\nthe rig's own cost (the blast dropped at lb1's XDP, driver mode: the sender, the veth, lb1's receive), median [min-max] of %d rounds: sent %s kpps, %s us of machine CPU per packet sent\n",
		len(r.rigCost), rate.format(1e-3, 1), cost.format(1e-3, 2))
	fmt.Fprintln(w, "each setup's machine CPU per packet beyond it, forwarding's over the setup's, in the same round (lb1's own work; estimate):")
	for _, s := range r.setups {
		if s.kernel() {
			continue
		}
		base, other := r.samples[r.setups[s.reference].name], r.samples[s.name]
		var xs []float64
		for i := range min(len(base), len(other), len(r.rigCost)) {
			rig := rigCostPerPacket(r.rigCost[i])
			f := perPacket(base[i].machine, base[i].blast.Received) - rig
			o := perPacket(other[i].machine, other[i].blast.Received) - rig
			if f > 0 && o > 0 {
				xs = append(xs, float64(f)/float64(o))
			}
		}
		if len(xs) == 0 {
			continue
		}
		line := fmt.Sprintf("  %s: %sx", s.name, summarize(xs).format(1, 2))
		if want, what, ok := goal(s); ok {
			line += fmt.Sprintf(" (%s goal %.2f)", what, want)
		}
		fmt.Fprintln(w, line)
	}
}
