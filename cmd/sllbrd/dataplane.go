package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/dataplane/bpfpath"
	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/internal/metrics"
)

// Values of --dataplane and --on-exit.
const (
	dataplaneKernel  = "kernel"  // decide in the kernel, queue what it cannot
	dataplaneNFQueue = "nfqueue" // queue every VIP packet
	dataplaneBPF     = "bpf"     // decide and forward in eBPF, then as kernel
	onExitRemove     = "remove"  // a deliberate shutdown: remove what sllbrd programmed
	onExitKeep       = "keep"    // an upgrade: leave the kernel dataplane running
	xdpOff           = "off"     // --bpf-xdp: the tc program only
)

// xdpModes are the values of --bpf-xdp but off.
var xdpModes = map[string]bpfpath.XDPMode{"auto": bpfpath.XDPAuto, "driver": bpfpath.XDPDriver, "generic": bpfpath.XDPGeneric}

// validateDataplane checks --dataplane and --on-exit.
func (c *config) validateDataplane() []error {
	var errs []error
	if c.dataplane != dataplaneKernel && c.dataplane != dataplaneNFQueue && c.dataplane != dataplaneBPF {
		errs = append(errs, fmt.Errorf("--dataplane %q: want %s, %s or %s", c.dataplane, dataplaneKernel, dataplaneBPF, dataplaneNFQueue))
	}
	if _, ok := xdpModes[c.bpfXDP]; !ok && c.bpfXDP != xdpOff {
		errs = append(errs, fmt.Errorf("--bpf-xdp %q: want off, auto, driver or generic", c.bpfXDP))
	} else if c.bpfXDP != xdpOff && c.dataplane != dataplaneBPF {
		errs = append(errs, fmt.Errorf("--bpf-xdp %s needs --dataplane %s", c.bpfXDP, dataplaneBPF))
	}
	if c.onExit != onExitRemove && c.onExit != onExitKeep {
		errs = append(errs, fmt.Errorf("--on-exit %q: want %s or %s", c.onExit, onExitRemove, onExitKeep))
	}
	return errs
}

// programmerOptions returns the dataplane.Programmer options of --dataplane:
// with the kernel path, after checking that this kernel can run it; with
// the eBPF datapath, after loading it too (d.bpf, which close releases).
func (d *daemon) programmerOptions(conn *nftables.Conn) ([]dataplane.ProgrammerOption, error) {
	cfg, log := d.cfg, d.log
	if cfg.dataplane == dataplaneNFQueue {
		log.Info("dataplane: every VIP packet is decided in userspace (nfqueue)")
		return nil, nil
	}
	maxOffset, err := nft.ProbeKernelPath(conn)
	if err != nil {
		return nil, fmt.Errorf("--dataplane %s: %w (use --dataplane %s on this kernel)", cfg.dataplane, err, dataplaneNFQueue)
	}
	if cfg.dataplane == dataplaneKernel {
		log.Info("dataplane: VIP packets are decided in the kernel; fragments, ICMP errors and what the rules cannot express in userspace (nfqueue)",
			"max_byte_match_offset", maxOffset)
		return []dataplane.ProgrammerOption{dataplane.WithKernelPath(maxOffset)}, nil
	}
	if err := checkBPFCaps(); err != nil {
		return nil, fmt.Errorf("--dataplane %s: %w (use --dataplane %s without eBPF)", dataplaneBPF, err, dataplaneKernel)
	}
	if d.bpf, err = bpfpath.Load(bpfpath.Options{}); err != nil {
		return nil, fmt.Errorf("--dataplane %s: %w (use --dataplane %s without eBPF)", dataplaneBPF, err, dataplaneKernel)
	}
	log.Info("dataplane: VIP packets are decided and forwarded by an eBPF program on the routers' interfaces; what it leaves goes to the nftables rules, and fragments, ICMP errors and what those cannot express to userspace (nfqueue)",
		"max_byte_match_offset", maxOffset)
	d.bpfPath = dataplane.NewBPFPath(d.bpf, dataplane.BPFOptions{XDP: cfg.bpfXDP != xdpOff, XDPMode: xdpModes[cfg.bpfXDP], Log: log})
	if cfg.bpfXDP != xdpOff {
		log.Info("dataplane: the eBPF datapath's XDP program forwards first what it can (next hops with known MACs)", "xdp", cfg.bpfXDP)
	}
	return []dataplane.ProgrammerOption{dataplane.WithBPFPath(d.bpfPath, maxOffset)}, nil
}

// engineStats is what the metrics read of the dataplane: the engine's
// counters, plus with the kernel path the kernel's (read with a connection
// of their own) and with the eBPF datapath its own, and a counter of failed
// reads registered in reg.
func engineStats(d *daemon, reg prometheus.Registerer) (metrics.EngineStats, error) {
	if d.cfg.dataplane == dataplaneNFQueue {
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
	if d.bpfPath != nil {
		reg.MustRegister(bpfActions{stats}, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sllbrd_bpf_neighbour_refresh_failures_total",
			Help: "Failed refreshes of the eBPF datapath's next hops and attachments between applies (interfaces, MTUs, with XDP the neighbour table's MACs), and lost notification sockets (retried every 5 s)."},
			func() float64 { return float64(d.bpfPath.RefreshFailures()) }))
	}
	d.kernel = stats
	return stats, nil
}

// bpfActions exports the eBPF datapath's per-action counters: what it did
// with every packet it saw on the routers' interfaces.
type bpfActions struct{ k *dataplane.KernelStats }

var (
	bpfPacketsDesc = prometheus.NewDesc("sllbrd_bpf_packets_total",
		"Packets the eBPF datapath saw on the routers' interfaces, by what it did: punt (to the nftables rules), redirect (forwarded to the endpoint's next hop), mark (marked, forwarded by policy routing), ttl-exceeded, martian-source.",
		[]string{"action"}, nil)
	bpfBytesDesc = prometheus.NewDesc("sllbrd_bpf_bytes_total",
		"Bytes of the packets sllbrd_bpf_packets_total counts (IP packets, or frames less their Ethernet header when punted).",
		[]string{"action"}, nil)
)

func (b bpfActions) Describe(ch chan<- *prometheus.Desc) {
	ch <- bpfPacketsDesc
	ch <- bpfBytesDesc
}

// Collect reports the counts last read when a read fails
// (sllbrd_kernel_counter_read_failures_total counts that).
func (b bpfActions) Collect(ch chan<- prometheus.Metric) {
	b.k.EachBPFAction(func(a bpfpath.Action, n dataplane.Count) {
		ch <- prometheus.MustNewConstMetric(bpfPacketsDesc, prometheus.CounterValue, float64(n.Packets), a.String())
		ch <- prometheus.MustNewConstMetric(bpfBytesDesc, prometheus.CounterValue, float64(n.Bytes), a.String())
	})
}

// Capabilities (linux/capability.h) the eBPF datapath needs.
const (
	capNetAdmin = 12 // attach at tc ingress; networking program types
	capSysAdmin = 21 // implies the two below
	capPerfmon  = 38 // the verifier's pointer arithmetic on packets (Spectre v1 mitigation off)
	capBPF      = 39 // load programs, create maps
)

// missingBPFCaps names the capabilities --dataplane bpf needs that the
// effective set of /proc/self/status's CapEff line lacks (status is that
// file's content).
func missingBPFCaps(status string) ([]string, error) {
	var eff uint64
	found := false
	for line := range strings.SplitSeq(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("CapEff %q: %w", v, err)
			}
			eff, found = n, true
		}
	}
	if !found {
		return nil, errors.New("no CapEff line in /proc/self/status")
	}
	has := func(c uint) bool { return eff&(1<<c) != 0 }
	var missing []string
	if !has(capNetAdmin) {
		missing = append(missing, "CAP_NET_ADMIN")
	}
	if !has(capBPF) && !has(capSysAdmin) {
		missing = append(missing, "CAP_BPF")
	}
	if !has(capPerfmon) && !has(capSysAdmin) {
		missing = append(missing, "CAP_PERFMON")
	}
	return missing, nil
}

// checkBPFCaps fails when this process lacks a capability --dataplane bpf
// needs, naming them: the kernel's own refusal (EPERM, or the verifier's
// "prohibited for !root") does not say which.
func checkBPFCaps() error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("reading the capabilities: %w", err)
	}
	missing, err := missingBPFCaps(string(status))
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("needs CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN (or root); missing: %s", strings.Join(missing, ", "))
	}
	return nil
}
