package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

var _ targetpod.Metrics = (*metrics.Target)(nil)

// DefaultTargetMetricsAddress is where `sllbrd target` serves /metrics,
// /healthz and /readyz unless told otherwise (9100 is the SLLBR's).
const DefaultTargetMetricsAddress = "127.0.0.1:9180"

// targetConfig is the command line of `sllbrd target`, validated.
type targetConfig struct {
	namespace, pod, kubeconfig, metricsAddress string
	resync                                     time.Duration
	requireConfig                              bool
	logLevel                                   slog.Level
}

func parseTargetFlags(args []string) (*targetConfig, error) {
	c := &targetConfig{}
	fs := flag.NewFlagSet("sllbrd target", flag.ContinueOnError)
	fs.StringVar(&c.pod, "pod", os.Getenv("POD_NAME"), "the pod this sidecar runs in (default $POD_NAME, from the downward API)")
	fs.StringVar(&c.namespace, "namespace", "", "the pod's namespace (default $POD_NAMESPACE, then the ServiceAccount's)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig for the API server (default: in-cluster)")
	fs.StringVar(&c.metricsAddress, "metrics-address", DefaultTargetMetricsAddress, "address of the HTTP endpoint serving /metrics, /healthz and /readyz")
	fs.DurationVar(&c.resync, "resync", 30*time.Second, "how often the applied configuration is checked and repaired (0: never)")
	fs.BoolVar(&c.requireConfig, "require-config", true,
		"not ready until the pod has a network configuration from the controller (so that no traffic reaches it before its VIPs are in place)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := parseArgs(fs, args, level, &c.logLevel); err != nil {
		return nil, err
	}
	var errs []error
	if c.pod == "" {
		errs = append(errs, errors.New("--pod not given and $POD_NAME is empty (set it from the downward API: fieldRef metadata.name)"))
	}
	if c.metricsAddress == "" {
		errs = append(errs, errors.New("--metrics-address is required (use 127.0.0.1:PORT to keep it local)"))
	}
	if c.resync < 0 {
		errs = append(errs, fmt.Errorf("--resync %v: want 0 or more", c.resync))
	}
	return c, errors.Join(errs...)
}

// targetMain runs `sllbrd target` and returns the exit code.
func targetMain(args []string) int {
	return runRole("sllbrd target", args, parseTargetFlags, func(c *targetConfig) slog.Level { return c.logLevel }, runTarget, "sllbrd target stopped; the applied configuration stays")
}

// runTarget applies the pod's network configuration until ctx ends.
func runTarget(ctx context.Context, cfg *targetConfig, log *slog.Logger) error {
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
	agent := targetpod.NewAgent(client, ns, cfg.pod, targetnet.New(kernel), targetpod.WithLogger(log), targetpod.WithMetrics(m),
		targetpod.WithRequireConfig(cfg.requireConfig), targetpod.WithLoopOptions(targetnet.WithResync(cfg.resync)))
	log.Info("sllbrd target starting", "version", version, "pod", ns+"/"+cfg.pod, "metrics_address", cfg.metricsAddress)
	return runWithAdmin(ctx, log, cfg.metricsAddress, agent.Ready, agent.Run, m)
}
