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
	name    string
	queues  int  // sllbrd's nfqueues; 0 is plain kernel forwarding
	fanout  bool // spread over the queues by CPU (--queue-fanout)
	senders int  // the client's sending threads
	// pinned runs the client on clientCPU and sllbrd on lbCPU; otherwise
	// both may use every CPU.
	pinned bool
	// reference is the index (in setups()) of the kernel forwarding setup
	// an sllbrd setup is compared with.
	reference int
}

func (s setup) kernel() bool { return s.queues == 0 }

// sample is what one measurement blast recorded.
type sample struct {
	blast lab.BlastResult
	// For sllbrd only: its CPU time during the blast, resources after it
	// and its nfqueue counters' increase.
	cpu lab.ProcStats
	nfq nfqCounters
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
	if s.kernel() {
		return b.measureKernel(ctx, s)
	}
	var smp sample
	err := b.withSllbrd(ctx, s, func(inst *e2e.Instance) (err error) {
		smp, err = b.measureInstance(ctx, inst, b.blastOptions(s, 0))
		return err
	})
	return smp, err
}

// placeClient pins this process (the client's senders) to clientCPU for a
// pinned setup and lets it use every CPU otherwise.
func (b *bench) placeClient(s setup) error {
	if s.pinned {
		return pinProcess(os.Getpid(), clientCPU)
	}
	return pinProcess(os.Getpid())
}

// measureKernel blasts through plain kernel forwarding (ECMP in lb1).
func (b *bench) measureKernel(ctx context.Context, s setup) (sample, error) {
	if err := b.lab.Baseline(ctx, lab.BaselineOptions{ECMP: true}); err != nil {
		return sample{}, err
	}
	if err := b.warmUp(ctx); err != nil {
		return sample{}, err
	}
	res, err := b.lab.Blast(ctx, b.blastOptions(s, 0))
	if err != nil {
		return sample{}, err
	}
	return sample{blast: res}, b.lab.RemoveBaseline(ctx)
}

// measureInstance blasts at rate (0: unbounded) through a running sllbrd
// and records its CPU time, RSS and nfqueue counters.
func (b *bench) measureInstance(ctx context.Context, inst *e2e.Instance, o lab.BlastOptions) (sample, error) {
	var smp sample
	cpu0, err := inst.Proc.Stats()
	if err != nil {
		return smp, err
	}
	nfq0, err := readNFQ(inst)
	if err != nil {
		return smp, err
	}
	if smp.blast, err = b.lab.Blast(ctx, o); err != nil {
		return smp, err
	}
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
	return smp, nil
}

// withSllbrd starts sllbrd in lb1 configured as s, routes the VIPs to it,
// warms the path up, runs fn and stops sllbrd.
func (b *bench) withSllbrd(ctx context.Context, s setup, fn func(*e2e.Instance) error) error {
	args := []string{"--queues", fmt.Sprint(s.queues), "--log-level", "info"}
	if s.fanout {
		args = append(args, "--queue-fanout")
	}
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
	if err := b.warmUp(ctx); err != nil {
		return err
	}
	if err := fn(inst); err != nil {
		return fmt.Errorf("%s: %w (log %s)", s.name, err, inst.Proc.LogPath)
	}
	return inst.Proc.Stop()
}

// warmUp sends a few packets so that neighbours are resolved before a
// measurement, and checks that they arrive.
func (b *bench) warmUp(ctx context.Context) error {
	res, err := b.lab.Blast(ctx, lab.BlastOptions{VIP: b.vip, Count: 2000, Rate: 20000, Duration: time.Second})
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
	return lab.BlastOptions{VIP: b.vip, Duration: b.o.duration, Senders: s.senders, Rate: rate}
}
