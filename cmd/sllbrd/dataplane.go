package main

import (
	"fmt"
	"log/slog"

	"github.com/google/nftables"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/internal/metrics"
)

// Values of --dataplane and --on-exit.
const (
	dataplaneKernel  = "kernel"  // decide in the kernel, queue what it cannot
	dataplaneNFQueue = "nfqueue" // queue every VIP packet
	onExitRemove     = "remove"  // a deliberate shutdown: remove what sllbrd programmed
	onExitKeep       = "keep"    // an upgrade: leave the kernel dataplane running
)

// validateDataplane checks --dataplane and --on-exit.
func (c *config) validateDataplane() []error {
	var errs []error
	if c.dataplane != dataplaneKernel && c.dataplane != dataplaneNFQueue {
		errs = append(errs, fmt.Errorf("--dataplane %q: want %s or %s", c.dataplane, dataplaneKernel, dataplaneNFQueue))
	}
	if c.onExit != onExitRemove && c.onExit != onExitKeep {
		errs = append(errs, fmt.Errorf("--on-exit %q: want %s or %s", c.onExit, onExitRemove, onExitKeep))
	}
	return errs
}

// programmerOptions returns the dataplane.Programmer options of --dataplane:
// with the kernel path, after checking that this kernel can run it.
func programmerOptions(cfg *config, conn *nftables.Conn, log *slog.Logger) ([]dataplane.ProgrammerOption, error) {
	if cfg.dataplane != dataplaneKernel {
		log.Info("dataplane: every VIP packet is decided in userspace (nfqueue)")
		return nil, nil
	}
	maxOffset, err := nft.ProbeKernelPath(conn)
	if err != nil {
		return nil, fmt.Errorf("--dataplane %s: %w (use --dataplane %s on this kernel)", dataplaneKernel, err, dataplaneNFQueue)
	}
	log.Info("dataplane: VIP packets are decided in the kernel; fragments, ICMP errors and what the rules cannot express in userspace (nfqueue)",
		"max_byte_match_offset", maxOffset)
	return []dataplane.ProgrammerOption{dataplane.WithKernelPath(maxOffset)}, nil
}

// engineStats is what the metrics read of the dataplane: the engine's
// counters, plus with the kernel path the kernel's (read with a connection
// of their own) and a counter of failed reads registered in reg.
func engineStats(d *daemon, reg prometheus.Registerer) (metrics.EngineStats, error) {
	if d.cfg.dataplane != dataplaneKernel {
		return d.engine, nil
	}
	conn, err := d.openNFTables()
	if err != nil {
		return nil, fmt.Errorf("nftables connection for the counters: %w", err)
	}
	stats := dataplane.NewKernelStats(d.engine, d.prog, func() (map[string]nft.Count, error) {
		return nft.ReadCounters(conn, nft.DefaultTableName)
	})
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sllbrd_kernel_counter_read_failures_total",
		Help: "Failed reads of the kernel path's counters (the counters keep their last values meanwhile)."},
		func() float64 { return float64(stats.ReadFailures()) }))
	d.kernel = stats
	return stats, nil
}
