package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"golang.org/x/sync/errgroup"

	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/targetbfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

var _ targetpod.Metrics = (*metrics.Target)(nil)

// The addresses where `sllbrd target` serves /metrics, /healthz and /readyz
// unless told otherwise. The sidecar's is 9180 (9100 is the SLLBR's). The
// node daemon's is 9181: its pod has a network namespace of its own, where
// nothing else listens, but a different port keeps it clear of a sidecar
// and of the SLLBR even where it is run in the node's namespace (and 9100
// is also node-exporter's there). Both listen on loopback only unless told
// otherwise: the manifests set :PORT for the kubelet's probes.
const (
	DefaultTargetMetricsAddress     = "127.0.0.1:9180"
	DefaultTargetNodeMetricsAddress = "127.0.0.1:9181"
	// DefaultRuntimeEndpoint is containerd's CRI socket.
	DefaultRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
)

// targetConfig is the command line of `sllbrd target`, validated: the
// sidecar (--pod, default $POD_NAME) or the node daemon (--node), never
// both.
type targetConfig struct {
	namespace, pod, kubeconfig, metricsAddress string
	pprofAddress                               string // "": off
	node, runtimeEndpoint                      string
	cleanup                                    bool
	resync                                     time.Duration
	requireConfig                              bool
	logLevel                                   slog.Level
}

func parseTargetFlags(args []string) (*targetConfig, error) {
	c := &targetConfig{}
	fs := flag.NewFlagSet("sllbrd target", flag.ContinueOnError)
	fs.StringVar(&c.pod, "pod", "", "sidecar: the pod this sidecar runs in (default $POD_NAME, from the downward API); not with --node")
	fs.StringVar(&c.node, "node", "", "node daemon: apply in every pod of this node not marked for the sidecar (give it explicitly, "+
		"e.g. --node=$(NODE_NAME) from the downward API's spec.nodeName); not with --pod")
	fs.StringVar(&c.namespace, "namespace", "", "sidecar: the pod's namespace (default $POD_NAMESPACE, then the ServiceAccount's)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig for the API server (default: in-cluster)")
	fs.StringVar(&c.metricsAddress, "metrics-address", "", "address of the HTTP endpoint serving /metrics, /healthz and /readyz (default "+
		DefaultTargetMetricsAddress+" for the sidecar, "+DefaultTargetNodeMetricsAddress+" for the node daemon)")
	registerPprofAddress(fs, &c.pprofAddress)
	fs.StringVar(&c.runtimeEndpoint, "runtime-endpoint", DefaultRuntimeEndpoint, "node daemon: the container runtime's CRI socket")
	fs.BoolVar(&c.cleanup, "cleanup", false, "node daemon: remove everything of sllbrd's from the node's node-mode pods and the node daemon's "+
		"status annotations, then idle until stopped (uninstall)")
	fs.DurationVar(&c.resync, "resync", 30*time.Second, "how often the applied configuration is checked and repaired (0: never)")
	fs.BoolVar(&c.requireConfig, "require-config", true,
		"sidecar: not ready until the pod has a network configuration from the controller (so that no traffic reaches it before its VIPs are in place)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := parseArgs(fs, args, level, &c.logLevel); err != nil {
		return nil, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	if given["node"] {
		errs = c.validateNode(given)
	} else {
		errs = c.validateSidecar(given)
	}
	if c.resync < 0 {
		errs = append(errs, fmt.Errorf("--resync %v: want 0 or more", c.resync))
	}
	if given["metrics-address"] && c.metricsAddress == "" {
		errs = append(errs, errors.New("--metrics-address is required (use 127.0.0.1:PORT to keep it local)"))
	}
	if err := checkPprofAddress(c.pprofAddress); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// validateNode checks the node daemon's command line.
func (c *targetConfig) validateNode(given map[string]bool) []error {
	var errs []error
	if given["pod"] {
		errs = append(errs, errors.New("--node and --pod exclude each other: --node runs the node daemon, --pod the sidecar"))
	}
	for _, f := range []string{"namespace", "require-config"} {
		if given[f] {
			errs = append(errs, fmt.Errorf("--%s is the sidecar's: not with --node", f))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(c.node) {
		errs = append(errs, fmt.Errorf("--node %q: %s (a node name; set it from the downward API's spec.nodeName)", c.node, msg))
	}
	if c.runtimeEndpoint == "" {
		errs = append(errs, errors.New("--runtime-endpoint is required with --node"))
	}
	if !given["metrics-address"] {
		c.metricsAddress = DefaultTargetNodeMetricsAddress
	}
	return errs
}

// validateSidecar checks the sidecar's command line.
func (c *targetConfig) validateSidecar(given map[string]bool) []error {
	var errs []error
	for _, f := range []string{"runtime-endpoint", "cleanup"} {
		if given[f] {
			errs = append(errs, fmt.Errorf("--%s is the node daemon's: only with --node", f))
		}
	}
	if !given["pod"] {
		c.pod = os.Getenv("POD_NAME")
	}
	if c.pod == "" {
		errs = append(errs, errors.New("neither --node nor --pod given, and $POD_NAME is empty: give --node NAME for the node daemon, "+
			"or run as a sidecar with --pod or $POD_NAME (from the downward API: fieldRef metadata.name)"))
	}
	if !given["metrics-address"] {
		c.metricsAddress = DefaultTargetMetricsAddress
	}
	return errs
}

// targetMain runs `sllbrd target` and returns the exit code.
func targetMain(args []string) int {
	return runRole("sllbrd target", args, parseTargetFlags, func(c *targetConfig) slog.Level { return c.logLevel }, runTarget, "sllbrd target stopped; the applied configuration stays")
}

// runTarget runs the sidecar or the node daemon until ctx ends.
func runTarget(ctx context.Context, cfg *targetConfig, log *slog.Logger) error {
	if cfg.node != "" {
		return runTargetNode(ctx, cfg, log)
	}
	rc, err := controllerRESTConfig(cfg.kubeconfig)
	if err != nil {
		return err
	}
	ns, err := namespace(cfg.namespace)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	kernel, err := targetnet.NewNetlinkKernel(0)
	if err != nil {
		return err
	}
	defer kernel.Close()
	m := metrics.NewTarget()
	// The BFD sessions of Gateways with liveness (probe=bfd), in the pod's
	// own namespace: this process's.
	bfdRunner := targetbfd.NewRunner(nil, targetbfd.WithLogger(log))
	agent := targetpod.NewAgent(client, ns, cfg.pod, targetnet.New(kernel), targetpod.WithLogger(log), targetpod.WithMetrics(m),
		targetpod.WithRequireConfig(cfg.requireConfig), targetpod.WithLoopOptions(targetnet.WithResync(cfg.resync)),
		targetpod.WithLiveness(bfdRunner))
	run := func(ctx context.Context) error {
		g, ctx := errgroup.WithContext(ctx)
		g.Go(func() error { return agent.Run(ctx) })
		g.Go(func() error { return bfdRunner.Run(ctx) })
		return g.Wait()
	}
	log.Info("sllbrd target starting", "version", version, "pod", ns+"/"+cfg.pod, "metrics_address", cfg.metricsAddress)
	return runWithAdmin(ctx, log, adminAddresses{cfg.metricsAddress, cfg.pprofAddress}, agent.Ready, run, m, metrics.NewTargetBFD(bfdRunner.Stats))
}
