package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/sysctl"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// bench is one run: the built binary, its manifests and the lab.
type bench struct {
	o   options
	lab *lab.Lab // where sllbrd and the nftables floor run
	// ref is a lab like lab where only plain kernel forwarding runs: no
	// policy rule is ever added to its lb1. IPv4 never clears a
	// namespace's fib_has_custom_rules, so forwarding in lab's lb1 after
	// sllbrd ran there would look up every packet through the rules.
	ref       *lab.Lab
	bin       string
	manifests string // directory of the manifests sllbrd reads
	vip       netip.Addr
	out       io.Writer
}

// blastRoute sends the lab's blast port (UDP) to all three targets.
var (
	blastService = []e2e.Service{{Name: "service-a", Targets: []int{1, 2, 3}}}
	blastRoute   = func(port uint16) []e2e.Route {
		return []e2e.Route{{Name: "blast", Service: "service-a", Priority: 10,
			Fields: fmt.Sprintf(`protocols: [UDP], destinationPorts: ["%d"]`, port)}}
	}
)

// setups are what every round measures, each sllbrd setup after its
// kernel forwarding reference. With two CPUs or more: NFQLB's placement (one
// sender on one CPU, the LB process on the other) and an unpinned one
// (a sender per CPU, sllbrd with a queue per CPU spread by CPU), each with
// the nfqueue dataplane, the kernel path, the eBPF datapath and the
// nftables floor (floor.go), and the kernel path with 10% of the flows
// fragmented (their datagrams take the userspace path).
//
// A setup added to a placement's list is compared with that placement's
// forwarding, searched and profiled when unpinned (searched, profiled) and
// held to its kind's goal (goal); an XDP variant of the eBPF datapath is a
// setup of dataplaneBPF with the sllbrd flags that attach it at XDP as
// xdpArgs.
func setups(o options) []setup {
	senders, n := o.senders, runtime.NumCPU()
	if o.rig == rigLB {
		return lbSetups(senders, n)
	}
	if n < 2 {
		return referToForwarding([]setup{{name: "kernel forwarding", senders: senders},
			{name: "sllbrd nfqueue, 1 queue", dataplane: dataplaneNFQueue, queues: 1, senders: senders},
			{name: "sllbrd kernel path", dataplane: dataplaneKernel, queues: 1, senders: senders},
			{name: "sllbrd bpf", dataplane: dataplaneBPF, queues: 1, senders: senders}})
	}
	return referToForwarding([]setup{
		{name: fmt.Sprintf("kernel, 1 sender on CPU %d", clientCPU), senders: 1, pinned: true},
		{name: fmt.Sprintf("nfqueue, 1 queue on CPU %d", lbCPU), dataplane: dataplaneNFQueue, queues: 1, senders: 1, pinned: true},
		{name: fmt.Sprintf("kernel path, sllbrd on CPU %d", lbCPU), dataplane: dataplaneKernel, queues: 1, senders: 1, pinned: true},
		{name: fmt.Sprintf("bpf, sllbrd on CPU %d", lbCPU), dataplane: dataplaneBPF, queues: 1, senders: 1, pinned: true},
		{name: "nftables floor, 1 sender", floor: true, senders: 1, pinned: true},
		{name: fmt.Sprintf("kernel, %d senders", senders), senders: senders},
		{name: fmt.Sprintf("nfqueue, %d queues fanout", n), dataplane: dataplaneNFQueue, queues: n, fanout: true, senders: senders},
		{name: "kernel path, unpinned", dataplane: dataplaneKernel, queues: n, fanout: true, senders: senders},
		{name: "bpf, unpinned", dataplane: dataplaneBPF, queues: n, fanout: true, senders: senders},
		{name: "bpf + XDP (auto), unpinned", dataplane: dataplaneBPF, xdpArgs: []string{"--bpf-xdp", "auto"}, queues: n, fanout: true, senders: senders},
		{name: "nftables floor, unpinned", floor: true, senders: senders},
		{name: "kernel path, 10% fragmented", dataplane: dataplaneKernel, queues: n, fanout: true, senders: senders, fragmentEvery: 10},
	})
}

// referToForwarding sets the reference of every setup but kernel
// forwarding to the kernel forwarding setup last before it in ss.
func referToForwarding(ss []setup) []setup {
	ref := 0
	for i := range ss {
		if ss[i].kernel() {
			ref = i
		} else {
			ss[i].reference = ref
		}
	}
	return ss
}

// unpinned returns the first unpinned setup of a dataplane ("" for kernel
// forwarding) without fragments or XDP, as the goals compare them.
func unpinned(ss []setup, dataplane string) (setup, bool) {
	for _, s := range searched(ss) {
		if s.dataplane == dataplane && !s.xdp() {
			return s, true
		}
	}
	return setup{}, false
}

// searched are the setups whose loss-free rate is searched: the unpinned
// ones without fragments, kernel forwarding and sllbrd's.
func searched(ss []setup) []setup {
	var out []setup
	for _, s := range ss {
		if !s.floor && !s.pinned && s.fragmentEvery == 0 {
			out = append(out, s)
		}
	}
	return out
}

// profiled are the setups profiled: the searched ones and the unpinned
// floor.
func profiled(ss []setup) []setup {
	out := searched(ss)
	for _, s := range ss {
		if s.floor && !s.pinned {
			out = append(out, s)
		}
	}
	return out
}

func run(ctx context.Context, o options, out io.Writer) error {
	start := time.Now()
	b, cleanup, err := newBench(ctx, o, out)
	if err != nil {
		return err
	}
	defer cleanup()
	rep := report{setups: setups(o), samples: map[string][]sample{}, env: environment(o)}
	for round := 1; round <= o.rounds; round++ {
		for _, s := range rep.setups {
			smp, err := b.measure(ctx, s)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, s.name, err)
			}
			fmt.Fprintf(out, "round %d  %-28s %s\n", round, s.name, brief(smp))
			rep.samples[s.name] = append(rep.samples[s.name], smp)
		}
		if o.rig == rigLB {
			smp, err := b.measureRigCost(ctx, o.senders)
			if err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			fmt.Fprintf(out, "round %d  %-28s %s, %.2f us of machine CPU per packet sent\n", round, "the rig alone", brief(smp),
				float64(rigCostPerPacket(smp).Nanoseconds())/1e3)
			rep.rigCost = append(rep.rigCost, smp)
		}
	}
	for _, s := range searched(rep.setups) {
		if !o.search {
			break
		}
		res, err := b.searchLossFree(ctx, s)
		if err != nil {
			return fmt.Errorf("loss-free search, %s: %w", s.name, err)
		}
		rep.lossFree = append(rep.lossFree, res)
	}
	if o.profile {
		rep.profiles = b.profiles(ctx, profiled(rep.setups), o.profileRounds)
	}
	rep.elapsed = time.Since(start)
	rep.write(out)
	return nil
}

// newBench builds sllbrd, writes its manifests and builds the lab; cleanup
// removes all of it.
func newBench(ctx context.Context, o options, out io.Writer) (*bench, func(), error) {
	root, err := e2e.ModuleRoot()
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "sllbrd-benche2e-")
	if err != nil {
		return nil, nil, err
	}
	b := &bench{o: o, manifests: tmp, vip: lab.DefaultVIPs[0], out: out}
	fmt.Fprintln(out, "building sllbrd ...")
	if b.bin, err = e2e.Build(ctx, root, tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	var logger lab.Logger
	if o.verbose {
		logger = stderrLogger{}
	}
	lo := lab.Options{Targets: 3, NoResponders: true, Logger: logger}
	if o.rig == rigLB {
		lo = lab.Options{PointToPoint: true, NoResponders: true, Logger: logger}
	}
	b.lab, err = lab.New(ctx, lo)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	cleanup := func() {
		for _, l := range []*lab.Lab{b.ref, b.lab} {
			if l == nil {
				continue
			}
			if err := l.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "benche2e: lab cleanup:", err)
			}
		}
		os.RemoveAll(tmp)
	}
	if b.ref, err = lab.New(ctx, lo); err != nil {
		cleanup()
		return nil, nil, err
	}
	for _, l := range []*lab.Lab{b.lab, b.ref} {
		if err := setSLLBRSysctls(ctx, l); err != nil {
			cleanup()
			return nil, nil, err
		}
		if o.rig == rigLB {
			if err := sinkAllTargets(ctx, l); err != nil {
				cleanup()
				return nil, nil, err
			}
		}
	}
	if err := e2e.WriteManifests(tmp, blastService, blastRoute(b.lab.Options().BlastPort)); err != nil {
		cleanup()
		return nil, nil, err
	}
	return b, cleanup, nil
}

// setSLLBRSysctls sets in lb1 the sysctls sllbrd sets in its namespace at
// start (sysctl.Required), so that every setup, kernel forwarding included,
// runs under them. sllbrd leaves them set when it stops; without this only
// the first measurement, the first round's kernel forwarding, would run
// under the lab's own (rp_filter 0: no reverse-path route lookup per
// packet; another multipath hash).
func setSLLBRSysctls(ctx context.Context, l *lab.Lab) error {
	args := []string{"sysctl", "-qw"}
	for _, s := range sysctl.Required {
		args = append(args, s.Name+"="+s.Want)
	}
	if out, err := l.Exec(ctx, lab.LBName(1), args...); err != nil {
		return fmt.Errorf("sllbrd's sysctls in %s: %w: %s", lab.LBName(1), err, out)
	}
	return nil
}

type stderrLogger struct{}

func (stderrLogger) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// environment describes the machine and the run's settings.
func environment(o options) string {
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	rig := "the whole path (client, gateway, bridges, lb1, 3 targets)"
	if o.rig == rigLB {
		rig = "lb1 alone (frames from the gateway's packet socket, t1 dropping at XDP)"
	}
	return fmt.Sprintf("%d CPUs, kernel %s, %s; rig %s: %s; %d rounds of %v blasts of 64-byte UDP frames to %v",
		runtime.NumCPU(), strings.TrimSpace(string(kernel)), runtime.Version(), o.rig, rig, o.rounds, o.duration, lab.DefaultVIPs[0])
}

// brief is one progress line for a sample.
func brief(s sample) string {
	line := fmt.Sprintf("recv %7.1f kpps  sent %7.1f kpps  loss %5.2f%%",
		s.blast.ReceivedPPS()/1e3, s.blast.SentPPS()/1e3, 100*s.blast.Loss())
	if s.cpu.RSS != 0 {
		line += fmt.Sprintf("  cpu %.2f us/pkt (user %v sys %v)  %.1f pkts/batch  kernel drops %.0f",
			float64(s.cpuPerPacket().Nanoseconds())/1e3, s.cpu.User, s.cpu.System, s.nfq.perBatch(),
			s.nfq.kernelDropped+s.nfq.userDropped)
	}
	if s.bpf != nil {
		line += "  bpf " + s.bpf.String()
	}
	return line
}
