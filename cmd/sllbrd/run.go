package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/nftables"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/sllbrd/sllbrd/bgp"
	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/dataplane/bpfpath"
	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/dataplane/sysctl"
	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/reconcile"
	"github.com/sllbrd/sllbrd/internal/uplink"
)

// daemon holds what run starts; fields are set once in newDaemon.
type daemon struct {
	cfg    *config
	log    *slog.Logger
	engine *dataplane.Engine
	prog   *dataplane.Programmer
	kernel *dataplane.KernelStats // the kernel path's counters; nil with --dataplane nfqueue
	bpf    *bpfpath.Datapath      // the eBPF datapath (--dataplane bpf)
	// bpfPath drives it; its Run keeps the XDP program's MACs current.
	bpfPath *dataplane.BPFAdapter
	queues  *nfqueue.Group
	loop    *reconcile.Loop
	source  *configSource

	registry *prometheus.Registry
	applies  *metrics.Config
	diag     *admin.Diagnostics // the admin socket, metrics and pprof servers

	applier *applier
	// The endpoint liveness checks (startLiveness); stopEvents stops the
	// Event recorder (nil without an API server).
	liveness       *endpointLiveness
	livenessEvents *livenessEvents
	stopEvents     func()
	uplink         *uplink.Uplink
	speaker        *bgp.OnDemand
	status         *configStatus // what sllbrd show config reports
	// draining is set at SIGTERM: not ready from then on, so that kubelet
	// reports it and the controller takes this SLLBR out of the targets'
	// next hops while it still forwards (the drain must outlast that).
	draining atomic.Bool
	// interfaceWatchFailures counts watchInterfaces' failed dials and
	// receives.
	interfaceWatchFailures atomic.Uint64

	// The netfilter netlink sockets stay open for the daemon's life:
	// releasing one after a commit holds the nftables commit mutex for an
	// RCU grace period (nft.NetlinkEntryConn), which delayed every apply
	// by 10-20 ms when each operation dialled its own.
	nftConns []*nftables.Conn
	entries  *nft.NetlinkEntryConn
}

func run(ctx context.Context, cfg *config, log *slog.Logger) error {
	d, err := newDaemon(cfg, log)
	if err != nil {
		return err
	}
	if err := d.startRouting(ctx); err != nil {
		d.close()
		return err
	}
	defer d.close()
	return d.run(ctx)
}

// newDaemon checks the configuration source, then the kernel settings, and
// opens the kernel handles: nothing in the kernel is touched before the
// command line and the source are known to be usable.
func newDaemon(cfg *config, log *slog.Logger) (*daemon, error) {
	d := &daemon{cfg: cfg, log: log, engine: dataplane.NewEngine(), applies: metrics.NewConfig(), diag: admin.NewDiagnostics(log)}
	d.applier = &applier{log: log, metrics: d.applies}
	d.loop = reconcile.New(d.applier.apply)
	d.applier.rerunBy = d.loop.RunBy
	d.applier.gateways = d.loop.Gateways
	var err error
	if d.source, err = newConfigSource(cfg, log, d.loop, d.applies); err != nil {
		return nil, err
	}
	d.applier.problems = d.source.setDataplaneProblems
	if err := d.startLiveness(); err != nil {
		return nil, err
	}
	findings, err := sysctl.Ensure(cfg.setSysctls)
	for _, f := range findings {
		if f.Fixed {
			log.Info("sysctl set", "name", f.Name, "value", f.Want, "was", f.Have)
		} else {
			log.Warn("sysctl has the wrong value and was not set", "name", f.Name, "want", f.Want, "have", f.Have)
		}
	}
	if err != nil {
		log.Warn("sysctls", "err", err)
	}
	conn, err := d.openNFTables()
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	d.entries = nft.NewNetlinkEntryConn(0)
	rules, err := nft.New(conn, nft.WithEntryConn(d.entries))
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	log.Info("nftables queue statement", "mode", rules.Mode().String())
	kernel, err := route.NewNetlinkKernel(0)
	if err != nil {
		return nil, fmt.Errorf("policy routing: %w", err)
	}
	routes, err := route.New(kernel)
	if err != nil {
		return nil, fmt.Errorf("policy routing: %w", err)
	}
	log.Info("nfqueue queues", "first", cfg.queueFirst, "queues", cfg.queues, "chosen-by", cfg.queuesRule)
	d.queues, err = nfqueue.OpenGroup(uint16(cfg.queueFirst), cfg.queues,
		nfqueue.WithCopyRange(cfg.copyRange), nfqueue.WithLockOSThread())
	if err != nil {
		return nil, fmt.Errorf("nfqueue %d..%d: %w", cfg.queueFirst, int(cfg.queueFirst)+cfg.queues-1, err)
	}
	opts, err := d.programmerOptions(conn)
	if err != nil {
		d.queues.Close()
		return nil, err
	}
	d.prog = dataplane.NewProgrammer(d.engine, rules, routes,
		nft.QueueRange{First: uint16(cfg.queueFirst), Count: uint16(cfg.queues)}, cfg.queueFanout, dataplane.ReturnTable, opts...)
	// A previous run may have left the kernel path running (--on-exit keep,
	// or a crash): keep its marks so that the first apply changes nothing
	// that still holds.
	if n, err := d.prog.Adopt(); err != nil {
		log.Warn("adopting the rules of a previous run", "err", err)
	} else if n > 0 {
		log.Info("adopted the endpoint marks of a previous run's kernel path", "marks", n)
	}
	d.adoptReturnPath()
	d.applier.dataplane = d.recordStatus(d.prog)
	d.registry = metrics.NewRegistry()
	stats, err := engineStats(d, d.registry)
	if err != nil {
		d.queues.Close()
		return nil, err
	}
	d.registry.MustRegister(metrics.NewEngineCollector(stats), metrics.NewNFQueueCollector(metrics.GroupQueues(d.queues)),
		d.applies, metrics.ReadyGauge(d.ready), metrics.SourceInSyncGauge(d.source.InSync), diagnosticsCollector{d.diag}, metrics.NewLivenessCollector(d.liveness), d.interfaceWatchCollector())
	return d, nil
}

// openNFTables opens a lasting nftables connection that close closes.
func (d *daemon) openNFTables() (*nftables.Conn, error) {
	conn, err := nftables.New(nftables.AsLasting())
	if err != nil {
		return nil, err
	}
	d.nftConns = append(d.nftConns, conn)
	return conn, nil
}

// ready reports whether the latest configuration is programmed and every
// part is working, with the reasons when not. The diagnostics servers are
// not among those parts (admin.Diagnostics says why).
func (d *daemon) ready() (bool, []string) {
	var why []string
	if ok, reason := d.source.Ready(); !ok {
		why = append(why, reason)
	}
	if s := d.loop.Status(); !s.Ready() {
		why = append(why, s.Reason())
	}
	if ok, reason := d.applier.returnPath.ready(); !ok {
		why = append(why, reason)
	}
	if d.draining.Load() {
		why = append(why, "stopping: VIPs withdrawn, draining before exit")
	}
	return len(why) == 0, why
}

// run serves until ctx ends, then withdraws, drains and stops.
func (d *daemon) run(ctx context.Context) error {
	runCtx, stopAll := context.WithCancel(context.Background())
	defer stopAll()
	g, gctx := errgroup.WithContext(runCtx)
	if err := d.serveAdmin(g, gctx); err != nil {
		return err
	}
	g.Go(func() error { return d.engine.Serve(gctx, d.queues) })
	g.Go(func() error { return d.loop.Run(gctx) })
	g.Go(func() error { return d.watchInterfaces(gctx) })
	g.Go(func() error { return d.liveness.run(gctx) })
	g.Go(func() error { return d.livenessEvents.run(gctx) })
	g.Go(func() error { return d.source.Run(gctx) })
	g.Go(func() error { return d.uplink.Run(gctx) })
	if d.bpfPath != nil {
		g.Go(func() error { return d.bpfPath.Run(gctx) })
	}
	g.Go(func() error {
		select {
		case <-gctx.Done(): // something failed
		case <-ctx.Done():
			d.draining.Store(true)
			d.log.Info("stopping: withdrawing VIPs, then draining", "drain", d.cfg.drain.String())
			shutdownCtx, cancel := context.WithTimeout(context.Background(), d.cfg.drain+10*time.Second)
			if err := d.uplink.Shutdown(shutdownCtx, d.cfg.drain); err != nil {
				d.log.Error("withdrawing and draining", "err", err)
			}
			cancel()
			stopAll()
		}
		return nil
	})
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// close removes what sllbrd programmed (unless --on-exit keep leaves it for
// the next run to adopt) and releases the queues.
func (d *daemon) close() {
	if d.cfg.onExit == onExitKeep {
		d.log.Info("leaving the nftables table and policy routes in place (--on-exit keep)")
	} else if err := d.prog.Cleanup(); err != nil {
		d.log.Error("cleanup", "err", err)
	}
	if err := d.queues.Close(); err != nil {
		d.log.Error("closing queues", "err", err)
	}
	if d.bpf != nil {
		// Detaches it (also with --on-exit keep, until pinning): the
		// nftables rules left in place decide its packets then.
		if err := d.bpf.Close(); err != nil {
			d.log.Error("closing the eBPF datapath", "err", err)
		}
	}
	for _, c := range d.nftConns {
		if err := c.CloseLasting(); err != nil {
			d.log.Warn("closing an nftables socket", "err", err)
		}
	}
	if err := d.entries.Close(); err != nil {
		d.log.Warn("closing the nftables entry socket", "err", err)
	}
	if err := d.liveness.close(); err != nil {
		d.log.Warn("closing the liveness probe sockets", "err", err)
	}
	if d.stopEvents != nil {
		d.stopEvents()
	}
}
