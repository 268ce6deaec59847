package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"runtime"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
)

// minCopyRange is the smallest --copy-range: an ICMPv6 error quoting an
// IPv6 header and the transport ports needs about this much.
const minCopyRange = 128

// config is the command line, validated.
type config struct {
	gateway        string
	namespace      string
	manifests      string
	kubeconfig     string
	metricsAddress string

	queueFirst  uint
	queues      int
	queuesRule  string // why queues has its value, for the log
	queueFanout bool
	copyRange   int

	dataplane string // --dataplane: kernel, bpf or nfqueue (dataplane.go)
	bpfXDP    string // --bpf-xdp: off, auto, driver or generic
	onExit    string // --on-exit: remove or keep

	drain       time.Duration
	setSysctls  bool
	routerID    string
	waitForBFD  bool
	logLevel    slog.Level
	showVersion bool

	admin adminFlags // admin socket, pprof, run-time log level (admin_daemon.go)
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("sllbrd", flag.ContinueOnError)
	fs.StringVar(&c.gateway, "gateway", "", "name of the Gateway this instance serves (required); namespace/name when ambiguous")
	fs.StringVar(&c.namespace, "namespace", "", "namespace of the Gateway when reading the API server (default: the pod's namespace)")
	fs.StringVar(&c.manifests, "manifests", "", "read the configuration from this YAML file or directory instead of the API server")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig for the API server (default: in-cluster)")
	fs.StringVar(&c.metricsAddress, "metrics-address", "127.0.0.1:9100", "address of the HTTP endpoint serving /metrics, /healthz and /readyz")
	fs.UintVar(&c.queueFirst, "queue-first", 0, "first nfqueue number")
	fs.IntVar(&c.queues, "queues", 0, fmt.Sprintf("number of nfqueues (and reader threads), 1..%d (default: the CPUs usable under the container's CPU limit, at most %d)", maxQueues, maxQueues))
	fs.BoolVar(&c.queueFanout, "queue-fanout", false, "spread packets over the queues by CPU instead of by flow addresses")
	fs.IntVar(&c.copyRange, "copy-range", nfqueue.DefaultCopyRange, fmt.Sprintf("bytes of each packet copied to user space, %d..%d (headers and byte matches must fit)", minCopyRange, nfqueue.MaxCopyRange))
	fs.StringVar(&c.dataplane, "dataplane", dataplaneKernel, "where VIP packets are decided: kernel (nftables; fragments, ICMP errors and what the rules cannot express go to nfqueue), bpf (an eBPF program on the routers' interfaces decides and forwards, and leaves the rest to the kernel path; needs CAP_BPF and CAP_PERFMON) or nfqueue (all in userspace)")
	fs.StringVar(&c.bpfXDP, "bpf-xdp", xdpOff, "with --dataplane bpf, also an XDP program on the routers' interfaces that forwards first the packets whose next hop's MAC is known: off, auto (driver mode where the driver has it, else generic; generic on veth), driver or generic")
	fs.StringVar(&c.onExit, "on-exit", onExitRemove, "on SIGTERM/SIGINT: remove (a deliberate shutdown: delete the nftables table and policy routes) or keep (an upgrade: leave them, so the kernel path keeps forwarding and the next start adopts them)")
	fs.DurationVar(&c.drain, "drain", 5*time.Second, "on SIGTERM, time between withdrawing the VIPs and stopping")
	fs.BoolVar(&c.setSysctls, "set-sysctls", true, "set the sysctls sllbrd needs (else only report the wrong ones)")
	fs.StringVar(&c.routerID, "router-id", "", "BGP router id (an IPv4 address); default: derived from the interfaces")
	fs.BoolVar(&c.waitForBFD, "bgp-wait-for-bfd", false, "keep a BGP session down until its BFD session is up")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	c.admin.register(fs)
	if err := parseArgs(fs, args, level, &c.logLevel); err != nil {
		return nil, err
	}
	if c.showVersion {
		return c, nil
	}
	c.queuesRule = "--queues"
	if !isSet(fs, "queues") {
		c.queues, c.queuesRule = defaultQueues(runtime.NumCPU(), os.DirFS("/"))
	}
	return c, c.validate()
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func (c *config) validate() error {
	var errs []error
	if c.gateway == "" {
		errs = append(errs, errors.New("--gateway is required"))
	}
	if c.queues < 1 || c.queues > maxQueues {
		errs = append(errs, fmt.Errorf("--queues %d: want 1..%d (one reader thread per queue; leave it unset for "+
			"one queue per usable CPU, at most %d)", c.queues, maxQueues, maxQueues))
	}
	if c.queueFirst+uint(c.queues) > 65535 {
		errs = append(errs, fmt.Errorf("--queue-first %d + --queues %d exceed queue 65535", c.queueFirst, c.queues))
	}
	if c.copyRange < minCopyRange || c.copyRange > nfqueue.MaxCopyRange {
		errs = append(errs, fmt.Errorf("--copy-range %d: want %d..%d (headers of an ICMPv6 error quoting IPv6 need ~%d; "+
			"the kernel copies at most %d bytes, NFQNL_MAX_COPY_RANGE)", c.copyRange, minCopyRange, nfqueue.MaxCopyRange,
			minCopyRange, nfqueue.MaxCopyRange))
	}
	if c.drain < 0 {
		errs = append(errs, fmt.Errorf("--drain %v: must not be negative", c.drain))
	}
	if c.routerID != "" {
		if a, err := netip.ParseAddr(c.routerID); err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("--router-id %q: want an IPv4 address", c.routerID))
		}
	}
	errs = append(errs, c.validateDataplane()...)
	if c.metricsAddress == "" {
		errs = append(errs, errors.New("--metrics-address is required (use 127.0.0.1:PORT to keep it local)"))
	}
	errs = append(errs, c.admin.validate())
	return errors.Join(errs...)
}

// parseArgs parses args into fs (every role's flags), refuses positional
// arguments and sets level from the --log-level text.
func parseArgs(fs *flag.FlagSet, args []string, levelText *string, level *slog.Level) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := level.UnmarshalText([]byte(*levelText)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	return nil
}
