package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/bgp"
	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/internal/admin"
)

// Environment variables giving the admin flags' defaults (the same for the
// daemon and the show/explain/log-level clients).
const (
	envAdminSocket = "SLLBRD_ADMIN_SOCKET"
	envAdminGroup  = "SLLBRD_ADMIN_GROUP"
)

// adminFlags is the command line of the admin interfaces.
type adminFlags struct {
	socket       string
	group        string
	gid          int // resolved group; -1: none
	pprofAddress string
	// level is the daemon's log level, changed at run time by
	// `sllbrd log-level`; main makes its logger with it.
	level *slog.LevelVar
}

func (a *adminFlags) register(fs *flag.FlagSet) {
	a.level, a.gid = new(slog.LevelVar), -1
	fs.StringVar(&a.socket, "admin-socket", envOr(envAdminSocket, admin.DefaultSocket),
		"unix socket serving sllbrd show, explain and log-level (empty: none); default $"+envAdminSocket+" or "+admin.DefaultSocket)
	fs.StringVar(&a.group, "admin-group", os.Getenv(envAdminGroup),
		"group (number, or name in /etc/group) whose members may use the admin socket besides root; default $"+envAdminGroup)
	registerPprofAddress(fs, &a.pprofAddress)
}

func (a *adminFlags) validate() error {
	var errs []error
	if a.socket != "" && !filepath.IsAbs(a.socket) {
		errs = append(errs, fmt.Errorf("--admin-socket %q: want an absolute path", a.socket))
	}
	if a.group != "" {
		gid, err := admin.ParseGroup(a.group)
		if err != nil {
			errs = append(errs, fmt.Errorf("--admin-group: %w", err))
		}
		a.gid = gid
	}
	if err := checkPprofAddress(a.pprofAddress); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// recordStatus wraps the applier's dataplane and the configuration source
// so that `sllbrd show config` can report what they did.
func (d *daemon) recordStatus(p programmer) programmer {
	d.status = newConfigStatus(time.Now)
	d.source.onUpdate = d.status.observeSource
	return recordingProgrammer{programmer: p, status: d.status}
}

// serveAdmin opens the diagnostics servers the flags ask for (the admin
// socket, the metrics endpoint, pprof) and serves them in g until gctx
// ends: opening any fails the start, with nothing left open; after that
// none ends g (startDiagnostics).
func (d *daemon) serveAdmin(g *errgroup.Group, gctx context.Context) error {
	a := &d.cfg.admin
	var servers []diagnosticServer
	if a.socket != "" {
		servers = append(servers, diagnosticServer{admin.ServerAdminSocket, func() (func(context.Context) error, error) {
			srv, err := admin.Listen(a.socket, d.adminBackend(), admin.WithGroup(a.gid), admin.WithLogger(d.log), admin.WithDiagnostics(d.diag))
			if err != nil {
				return nil, err
			}
			return srv.Serve, nil
		}})
	}
	servers = append(servers, metricsServer(d.diag, d.cfg.metricsAddress, d.registry, d.ready, d.log))
	if a.pprofAddress != "" {
		servers = append(servers, pprofServer(d.diag, a.pprofAddress, d.log))
	}
	return startDiagnostics(g, gctx, d.diag, servers...)
}

// adminBackend answers the admin socket from d's parts.
func (d *daemon) adminBackend() *adminBackend {
	b := &adminBackend{engine: d.engine, status: d.status, ready: d.ready, inSync: d.source.InSync, gateway: d.cfg.gateway,
		source: sourceOf(d.cfg), queues: d.cfg.queues, copyRange: d.cfg.copyRange,
		level: d.cfg.admin.level, log: d.log, now: time.Now, liveness: d.liveness.view}
	if d.kernel != nil {
		b.kernel = d.kernel
	}
	if qs := d.queues.Queues(); len(qs) > 0 {
		b.holdLimit = int(dataplane.HoldLimit(qs[0].MaxLen()))
	}
	b.bgp = func(ctx context.Context) ([]bgp.PeerStats, error) {
		if d.speaker == nil {
			return nil, nil
		}
		return d.speaker.Stats(ctx)
	}
	b.bfd = func() []bfd.Stats {
		if d.uplink == nil {
			return nil
		}
		return d.uplink.BFD().AllStats()
	}
	return b
}

// sourceOf describes where cfg reads the configuration from.
func sourceOf(cfg *config) admin.Source {
	if cfg.manifests != "" {
		path, err := filepath.Abs(cfg.manifests)
		if err != nil {
			path = cfg.manifests
		}
		return admin.Source{Kind: "file", Path: path}
	}
	src := admin.Source{Kind: "apiserver"}
	if rc, err := restConfig(cfg.kubeconfig); err == nil {
		src.Server = rc.Host
	}
	src.Namespace, _ = namespace(cfg.namespace) // both were resolved once at start
	return src
}
