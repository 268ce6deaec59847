package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/metrics"
)

// diagnosticServer is a diagnostics server to open at start and keep
// serving (admin.Diagnostics).
type diagnosticServer struct {
	name string
	open admin.Opener
}

// startDiagnostics opens every server now, so that a bad address or a port
// in use fails the start (the servers opened before the failing one are
// closed), then serves them in g until ctx ends. They never fail g: after
// the start their failures are diag's to report and repair, and the
// dataplane, the controller or the target agent go on.
func startDiagnostics(g *errgroup.Group, ctx context.Context, diag *admin.Diagnostics, servers ...diagnosticServer) error {
	var kept []*admin.Kept
	for _, s := range servers {
		k, err := diag.Start(s.name, s.open)
		if err != nil {
			for _, o := range kept {
				o.Close()
			}
			return err
		}
		kept = append(kept, k)
	}
	for _, k := range kept {
		g.Go(func() error {
			k.Run(ctx)
			return nil
		})
	}
	return nil
}

// metricsServer is the HTTP endpoint (/metrics, /healthz, /readyz) on addr.
func metricsServer(diag *admin.Diagnostics, addr string, reg *prometheus.Registry, ready func() (bool, []string),
	log *slog.Logger, opts ...metrics.ServerOption) diagnosticServer {
	return diagnosticServer{admin.ServerMetrics, func() (func(context.Context) error, error) {
		var lc net.ListenConfig
		ln, err := lc.Listen(context.Background(), "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
		}
		srv := metrics.NewServer(addr, reg, ready, append([]metrics.ServerOption{metrics.WithLogger(log)}, opts...)...)
		return func(ctx context.Context) error { return srv.Serve(ctx, diag.Listener(admin.ServerMetrics, ln)) }, nil
	}}
}

// registerPprofAddress defines --pprof-address, the same in every role
// (sllbrd, sllbrd controller, sllbrd target): off by default.
func registerPprofAddress(fs *flag.FlagSet, addr *string) {
	fs.StringVar(addr, "pprof-address", "", "serve net/http/pprof on this loopback address, e.g. 127.0.0.1:6060 (default: off)")
}

// checkPprofAddress refuses an --pprof-address whose host is not a
// loopback IP address (admin.CheckLoopback); "" (off) is accepted.
func checkPprofAddress(addr string) error {
	if addr == "" {
		return nil
	}
	if err := admin.CheckLoopback(addr); err != nil {
		return fmt.Errorf("--pprof-address: %w", err)
	}
	return nil
}

// pprofServer is net/http/pprof on the loopback address addr.
func pprofServer(diag *admin.Diagnostics, addr string, log *slog.Logger) diagnosticServer {
	return diagnosticServer{admin.ServerPprof, func() (func(context.Context) error, error) {
		ln, err := admin.ListenPprof(context.Background(), addr)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			return admin.ServePprof(ctx, diag.Listener(admin.ServerPprof, ln), log)
		}, nil
	}}
}

// Metrics of the diagnostics servers, from admin.Diagnostics.Health.
var (
	diagnosticsServingDesc = prometheus.NewDesc("sllbrd_diagnostics_server_serving",
		"Whether a diagnostics server (admin socket, metrics endpoint, pprof) serves (1), or failed and is opened again after a backoff (0); "+
			"its failures never stop forwarding.", []string{"server"}, nil)
	diagnosticsFailuresDesc = prometheus.NewDesc("sllbrd_diagnostics_server_failures_total",
		"Times a diagnostics server stopped serving, or could not be opened again, while sllbrd ran.", []string{"server"}, nil)
	diagnosticsAcceptErrorsDesc = prometheus.NewDesc("sllbrd_diagnostics_accept_errors_total",
		"Accepts of a diagnostics server that failed for a reason that passes (e.g. out of descriptors) and were retried.", []string{"server"}, nil)
)

// diagnosticsCollector exports the health of the diagnostics servers.
type diagnosticsCollector struct{ diag *admin.Diagnostics }

func (diagnosticsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- diagnosticsServingDesc
	ch <- diagnosticsFailuresDesc
	ch <- diagnosticsAcceptErrorsDesc
}

func (c diagnosticsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, h := range c.diag.Health() {
		serving := 0.0
		if h.Serving {
			serving = 1
		}
		ch <- prometheus.MustNewConstMetric(diagnosticsServingDesc, prometheus.GaugeValue, serving, h.Name)
		ch <- prometheus.MustNewConstMetric(diagnosticsFailuresDesc, prometheus.CounterValue, float64(h.Failures), h.Name)
		ch <- prometheus.MustNewConstMetric(diagnosticsAcceptErrorsDesc, prometheus.CounterValue, float64(h.AcceptErrors), h.Name)
	}
}
