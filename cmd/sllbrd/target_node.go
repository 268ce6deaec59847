package main

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/internal/cri"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube/targetnode"
)

var (
	_ targetnode.NetNS         = (*cri.Client)(nil)
	_ metrics.TargetNodeSource = (*targetnode.Daemon)(nil)
)

// runTargetNode runs the node daemon (`sllbrd target --node`), or its
// clean-up (--cleanup), until ctx ends.
func runTargetNode(ctx context.Context, cfg *targetConfig, log *slog.Logger) error {
	rc, err := controllerRESTConfig(cfg.kubeconfig)
	if err != nil {
		return err
	}
	// Above the daemon's own bound on status writes
	// (targetnode.DefaultWritesPerSecond), so that client-go's limiter
	// (5 per second by default) never holds back the informer's requests.
	rc.QPS, rc.Burst = 2*targetnode.DefaultWritesPerSecond, 4*targetnode.DefaultWriteBurst
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	// IFA_PROTO is the kernel's: checked once here, in the daemon's own
	// namespace, not in every pod at every apply.
	probe, err := targetnet.NewNetlinkKernel(0)
	if err != nil {
		return err
	}
	if err := probe.Close(); err != nil {
		return fmt.Errorf("close the probe's netlink sockets: %w", err)
	}
	rt, err := cri.Dial(cfg.runtimeEndpoint)
	if err != nil {
		return err
	}
	defer rt.Close()
	name, err := rt.Version(ctx)
	if err != nil {
		return fmt.Errorf("the container runtime (--runtime-endpoint): %w", err)
	}
	m := metrics.NewTarget()
	d, err := targetnode.New(client, cfg.node, rt, targetnode.WithLogger(log), targetnode.WithMetrics(m), targetnode.WithResync(cfg.resync))
	if err != nil {
		return err
	}
	run, mode := d.Run, "apply"
	if cfg.cleanup {
		run, mode = d.Cleanup, "cleanup"
	}
	log.Info("sllbrd target starting as the node daemon", "version", version, "node", cfg.node, "mode", mode, "runtime", name,
		"runtime_endpoint", cfg.runtimeEndpoint, "metrics_address", cfg.metricsAddress)
	// The applies of every pod (m) without the applied generation, which is
	// one pod's, and the node's own: pods by state, the runtime, skips, and
	// the pods' BFD sessions, summed.
	return runWithAdmin(ctx, log, adminAddresses{cfg.metricsAddress, cfg.pprofAddress}, d.Ready, run, metrics.NewTargetNode(m, d), metrics.NewTargetBFD(d.BFDStats))
}
