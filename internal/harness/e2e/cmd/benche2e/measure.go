package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// setup is one way the client blasts and lb1 forwards.
type setup struct {
	name string
	// dataplane is sllbrd's --dataplane (dataplaneKernel, dataplaneBPF,
	// dataplaneNFQueue); empty is plain kernel forwarding (ECMP routes in
	// lb1, no sllbrd).
	dataplane string
	queues    int  // sllbrd's nfqueues
	fanout    bool // spread over the queues by CPU (--queue-fanout)
	senders   int  // the client's sending threads
	// pinned runs the client on clientCPU and sllbrd on lbCPU; otherwise
	// both may use every CPU.
	pinned bool
	// reference is the index (in setups()) of the kernel forwarding setup
	// an sllbrd setup is compared with (set by referToForwarding).
	reference int
	// fragmentEvery > 0 fragments every fragmentEvery-th flow (the mixed
	// case: those datagrams take the userspace path).
	fragmentEvery int
	// floor is the nftables floor (floor.go) in lb1 instead of sllbrd.
	floor bool
	// xdpArgs, with dataplaneBPF, are the sllbrd flags that attach its
	// program at XDP too: the setup is held to bpfXDPOfForwarding instead
	// of bpfOfForwarding, and its program must forward the packets at XDP
	// (actionXDPRedirect). None: the tc program only.
	xdpArgs []string
}

// Values of sllbrd's --dataplane.
const (
	dataplaneKernel  = "kernel"
	dataplaneNFQueue = "nfqueue"
	dataplaneBPF     = "bpf"
)

// setupKind is what forwards in lb1.
type setupKind int

const (
	kindForwarding setupKind = iota // plain kernel forwarding
	kindNFQueue                     // sllbrd --dataplane nfqueue
	kindKernelPath                  // sllbrd --dataplane kernel
	kindFloor                       // the nftables floor (floor.go)
	kindBPF                         // sllbrd --dataplane bpf
)

func (s setup) kind() setupKind {
	switch {
	case s.floor:
		return kindFloor
	case s.dataplane == dataplaneNFQueue:
		return kindNFQueue
	case s.dataplane == dataplaneKernel:
		return kindKernelPath
	case s.dataplane == dataplaneBPF:
		return kindBPF
	}
	return kindForwarding
}

// xdp reports whether s runs sllbrd's eBPF program at XDP too.
func (s setup) xdp() bool { return s.kind() == kindBPF && len(s.xdpArgs) > 0 }

// kernel reports whether s is plain kernel forwarding.
func (s setup) kernel() bool { return s.kind() == kindForwarding }

// sample is what one measurement blast recorded.
type sample struct {
	blast lab.BlastResult
	// For sllbrd only: its CPU time during the blast, resources after it
	// and its nfqueue counters' increase; with the eBPF datapath, its
	// counters' increase too.
	cpu lab.ProcStats
	nfq nfqCounters
	bpf bpfCounters
	// machine is the busy time of all CPUs during the blast (the client,
	// the forwarding and whatever else runs on the shared machine).
	machine time.Duration
}

// cpuPerPacket is sllbrd's CPU time (user + system) per received packet.
func (s sample) cpuPerPacket() time.Duration {
	if s.blast.Received == 0 {
		return 0
	}
	return s.cpu.CPU() / time.Duration(s.blast.Received)
}

// measure runs one measurement blast through s.
func (b *bench) measure(ctx context.Context, s setup) (sample, error) {
	if err := b.placeClient(s); err != nil {
		return sample{}, err
	}
	var smp sample
	err := b.with(ctx, s, func(inst *e2e.Instance) (err error) {
		smp, err = b.measureInstance(ctx, inst, s, b.blastOptions(s, 0))
		return err
	})
	return smp, err
}

// with runs fn with lb1 forwarding as s: plain kernel forwarding (in the
// reference lab) or the nftables floor (inst is nil), or a started sllbrd.
func (b *bench) with(ctx context.Context, s setup, fn func(inst *e2e.Instance) error) error {
	if s.floor {
		return b.withFloor(ctx, func() error { return fn(nil) })
	}
	if !s.kernel() {
		return b.withSllbrd(ctx, s, fn)
	}
	if err := b.ref.Baseline(ctx, lab.BaselineOptions{ECMP: true}); err != nil {
		return err
	}
	if err := b.warmUp(ctx, b.ref); err != nil {
		return err
	}
	if err := fn(nil); err != nil {
		return err
	}
	return b.ref.RemoveBaseline(ctx)
}

// labOf is the lab s runs in: the reference lab for plain kernel
// forwarding, the other for the rest.
func (b *bench) labOf(s setup) *lab.Lab {
	if s.kernel() {
		return b.ref
	}
	return b.lab
}

// placeClient pins this process (the client's senders) to clientCPU for a
// pinned setup and lets it use every CPU otherwise.
func (b *bench) placeClient(s setup) error {
	if s.pinned {
		return pinProcess(os.Getpid(), clientCPU)
	}
	return pinProcess(os.Getpid())
}

// measureInstance blasts as o says through lb1 forwarding as s and records
// the machine's CPU time and, with a running sllbrd (inst not nil), its CPU
// time, RSS and nfqueue counters, and with the eBPF datapath its counters,
// which must show that its program forwarded the blast (checkForwarded).
func (b *bench) measureInstance(ctx context.Context, inst *e2e.Instance, s setup, o lab.BlastOptions) (sample, error) {
	var smp sample
	busy0, err := readBusy()
	if err != nil {
		return smp, err
	}
	if inst == nil {
		if smp.blast, err = b.labOf(s).Blast(ctx, o); err != nil {
			return smp, err
		}
		busy1, err := readBusy()
		smp.machine = busy1 - busy0
		return smp, err
	}
	cpu0, err := inst.Proc.Stats()
	if err != nil {
		return smp, err
	}
	nfq0, err := readNFQ(inst)
	if err != nil {
		return smp, err
	}
	var bpf0 bpfCounters
	if s.kind() == kindBPF {
		if bpf0, err = readBPF(inst); err != nil {
			return smp, err
		}
	}
	if smp.blast, err = b.lab.Blast(ctx, o); err != nil {
		return smp, err
	}
	busy1, err := readBusy()
	if err != nil {
		return smp, err
	}
	smp.machine = busy1 - busy0
	cpu1, err := inst.Proc.Stats()
	if err != nil {
		return smp, err
	}
	nfq1, err := readNFQ(inst)
	if err != nil {
		return smp, err
	}
	smp.cpu = lab.ProcStats{User: cpu1.User - cpu0.User, System: cpu1.System - cpu0.System,
		RSS: cpu1.RSS, Threads: cpu1.Threads}
	smp.nfq = nfq1.minus(nfq0)
	if s.kind() == kindBPF {
		bpf1, err := readBPF(inst)
		if err != nil {
			return smp, err
		}
		smp.bpf = bpf1.minus(bpf0)
	}
	return smp, s.checkForwarded(smp)
}

// withSllbrd starts sllbrd in lb1 configured as s, routes the VIPs to it,
// warms the path up, runs fn and stops sllbrd.
func (b *bench) withSllbrd(ctx context.Context, s setup, fn func(*e2e.Instance) error) error {
	args := []string{"--queues", fmt.Sprint(s.queues), "--log-level", "info", "--dataplane", s.dataplane}
	if s.fanout {
		args = append(args, "--queue-fanout")
	}
	args = append(args, s.xdpArgs...)
	inst, err := e2e.Start(b.lab, lab.LBName(1), b.bin, b.manifests, args...)
	if err != nil {
		return err
	}
	defer inst.Proc.Stop()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := inst.WaitProgrammed(wctx, 1); err != nil {
		return err
	}
	if s.pinned {
		if err := pinProcess(inst.Proc.PID, lbCPU); err != nil {
			return err
		}
	}
	if err := b.lab.RouteVIPsVia(ctx, 1); err != nil {
		return err
	}
	if err := b.warmUp(ctx, b.lab); err != nil {
		return err
	}
	if err := fn(inst); err != nil {
		return fmt.Errorf("%s: %w (log %s)", s.name, err, inst.Proc.LogPath)
	}
	return inst.Proc.Stop()
}

// warmUp sends a few packets so that neighbours are resolved before a
// measurement, and checks that they arrive.
func (b *bench) warmUp(ctx context.Context, l *lab.Lab) error {
	res, err := l.Blast(ctx, lab.BlastOptions{VIP: b.vip, Count: 2000, Rate: 20000, Duration: time.Second, FromGateway: b.o.rig == rigLB})
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if res.Received == 0 {
		return fmt.Errorf("warm-up: nothing arrived: %v", res)
	}
	return nil
}

// blastOptions is a measurement blast of s at rate (0: as fast as
// possible).
func (b *bench) blastOptions(s setup, rate float64) lab.BlastOptions {
	return lab.BlastOptions{VIP: b.vip, Duration: b.o.duration, Senders: s.senders, Rate: rate, FragmentEvery: s.fragmentEvery,
		FromGateway: b.o.rig == rigLB}
}
