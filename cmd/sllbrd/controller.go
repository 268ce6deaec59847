package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/sllbrd/sllbrd/deploy"
	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/kube/controller"
	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
)

var _ controller.Metrics = (*metrics.Controller)(nil)

// controllerConfig is the command line of `sllbrd controller`, validated.
type controllerConfig struct {
	namespace, kubeconfig, metricsAddress string
	pprofAddress                          string // "": off
	templateConfigMap                     string
	pod, container, sllbrImage            string
	workers                               int
	readinessHoldMax                      time.Duration
	election                              controller.LeaderElection
	logLevel                              slog.Level
}

func parseControllerFlags(args []string) (*controllerConfig, error) {
	c := &controllerConfig{}
	fs := flag.NewFlagSet("sllbrd controller", flag.ContinueOnError)
	fs.StringVar(&c.namespace, "namespace", "", "namespace to reconcile (default: the pod's namespace)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig for the API server (default: in-cluster)")
	fs.StringVar(&c.metricsAddress, "metrics-address", "127.0.0.1:9100", "address of the HTTP endpoint serving /metrics, /healthz and /readyz")
	registerPprofAddress(fs, &c.pprofAddress)
	fs.StringVar(&c.templateConfigMap, "template-configmap", controller.DefaultTemplateConfigMap,
		"ConfigMap holding the SLLBR Deployment template (key deployment.yaml); the built-in deploy/sllbrd template while it does not exist")
	fs.StringVar(&c.pod, "pod", os.Getenv("POD_NAME"),
		"the controller's own pod (default $POD_NAME, from the downward API): SLLBR pods whose template names no image get the image of its --container")
	fs.StringVar(&c.container, "container", DefaultControllerContainer, "the controller's container in --pod")
	fs.StringVar(&c.sllbrImage, "sllbr-image", "",
		"the image of SLLBR pods whose template names none, instead of --pod's (for a controller that runs outside a pod)")
	fs.IntVar(&c.workers, "workers", controller.DefaultWorkers, "objects reconciled in parallel")
	fs.DurationVar(&c.readinessHoldMax, "readiness-hold-max", controller.DefaultReadinessHoldMax,
		"longest readiness hold: an endpoint stays ready while its pod is not ready only for want of a probe result, "+
			"as after a kubelet restart (its probe time plus 2s, at most this; 0 disables the hold)")
	fs.BoolVar(&c.election.Enabled, "leader-elect", true, "elect one writing replica with a coordination.k8s.io Lease")
	fs.StringVar(&c.election.LeaseName, "leader-election-lease", controller.DefaultLeaseName, "name of the Lease")
	fs.DurationVar(&c.election.LeaseDuration, "leader-election-lease-duration", controller.DefaultLeaseDuration,
		"how long a standby replica waits before taking over a Lease that was not renewed")
	fs.DurationVar(&c.election.RenewDeadline, "leader-election-renew-deadline", controller.DefaultRenewDeadline,
		"how long the leader tries to renew before giving up the lead")
	fs.DurationVar(&c.election.RetryPeriod, "leader-election-retry-period", controller.DefaultRetryPeriod,
		"how often replicas try to acquire or renew the Lease")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := parseArgs(fs, args, level, &c.logLevel); err != nil {
		return nil, err
	}
	var errs []error
	if c.metricsAddress == "" {
		errs = append(errs, errors.New("--metrics-address is required (use 127.0.0.1:PORT to keep it local)"))
	}
	if err := checkPprofAddress(c.pprofAddress); err != nil {
		errs = append(errs, err)
	}
	if c.pod != "" {
		for _, msg := range validation.IsDNS1123Subdomain(c.pod) {
			errs = append(errs, fmt.Errorf("--pod %q: %s", c.pod, msg))
		}
	}
	for _, msg := range validation.IsDNS1123Label(c.container) {
		errs = append(errs, fmt.Errorf("--container %q: %s", c.container, msg))
	}
	if c.sllbrImage != strings.TrimSpace(c.sllbrImage) || strings.ContainsFunc(c.sllbrImage, unicode.IsSpace) {
		errs = append(errs, fmt.Errorf("--sllbr-image %q contains white space", c.sllbrImage))
	}
	if c.workers < 1 || c.workers > 64 {
		errs = append(errs, fmt.Errorf("--workers %d: want 1..64", c.workers))
	}
	if c.readinessHoldMax < 0 || c.readinessHoldMax > maxReadinessHold {
		errs = append(errs, fmt.Errorf("--readiness-hold-max %v: want 0 (no hold) to %v", c.readinessHoldMax, maxReadinessHold))
	}
	if e := c.election; e.Enabled && !(e.LeaseDuration > e.RenewDeadline && e.RenewDeadline > e.RetryPeriod && e.RetryPeriod > 0) {
		errs = append(errs, fmt.Errorf("want --leader-election-lease-duration (%v) > --leader-election-renew-deadline (%v) > --leader-election-retry-period (%v) > 0",
			e.LeaseDuration, e.RenewDeadline, e.RetryPeriod))
	}
	return c, errors.Join(errs...)
}

// maxReadinessHold bounds --readiness-hold-max: a real readiness failure
// that is not a crash leaves the tables up to the hold later.
const maxReadinessHold = 5 * time.Minute

// controllerMain runs `sllbrd controller` and returns the exit code.
func controllerMain(args []string) int {
	return runRole("sllbrd controller", args, parseControllerFlags, func(c *controllerConfig) slog.Level { return c.logLevel }, runController, "sllbrd controller stopped")
}

// runController reconciles until ctx ends; on SIGTERM the workers stop,
// then the Lease is released, then the admin endpoint closes.
func runController(ctx context.Context, cfg *controllerConfig, log *slog.Logger) error {
	rc, err := controllerRESTConfig(cfg.kubeconfig)
	if err != nil {
		return err
	}
	ns, err := namespace(cfg.namespace)
	if err != nil {
		return err
	}
	m := metrics.NewController()
	ctl, err := controller.New(rc, ns, controller.WithLogger(log), controller.WithMetrics(m),
		controller.WithLeaderElection(cfg.election), controller.WithWorkers(cfg.workers),
		controller.WithReadinessHold(cfg.readinessHoldMax),
		controller.WithTemplate(cfg.templateConfigMap, deploy.SLLBRDeploymentTemplate), sllbrImageOption(cfg, ns))
	if err != nil {
		return err
	}
	log.Info("sllbrd controller starting", "version", version, "namespace", ns, "identity", ctl.Identity(),
		"leader_elect", cfg.election.Enabled)
	err = runWithAdmin(ctx, log, adminAddresses{cfg.metricsAddress, cfg.pprofAddress}, ctl.Ready, ctl.Run, m)
	if errors.Is(err, sllbr.ErrNoImage) {
		return fmt.Errorf("%w: run the controller in its pod with POD_NAME from the downward API (it gives its own image), "+
			"give --sllbr-image, or name an image in the template", err)
	}
	return err
}

// DefaultControllerContainer is the controller's container in its pod
// (deploy/controller/deployment.yaml).
const DefaultControllerContainer = "controller"

// sllbrImageOption says where the image of SLLBR pods whose template names
// none comes from: --sllbr-image, else the controller's own container in
// --pod (its namespace: $POD_NAMESPACE, else the controller's), else
// nowhere (the controller then fails at start if the template needs one).
func sllbrImageOption(cfg *controllerConfig, ns string) controller.Option {
	switch {
	case cfg.sllbrImage != "":
		return controller.WithImage(cfg.sllbrImage)
	case cfg.pod != "":
		podNS := cmp.Or(os.Getenv("POD_NAMESPACE"), ns)
		return controller.WithImageFromPod(podNS, cfg.pod, cfg.container)
	}
	return controller.WithImage("")
}

// adminAddresses are where the controller and the target roles serve
// their diagnostics: the admin endpoint (--metrics-address) and pprof
// (--pprof-address, checked by checkPprofAddress; "": off).
type adminAddresses struct{ metrics, pprof string }

// runWithAdmin runs run and the diagnostics servers at addrs until ctx
// ends or run returns: the admin endpoint (/metrics with the collectors
// and sllbrd_ready, /healthz, /readyz from ready) and pprof if asked for.
// They are opened first (a port in use fails the start); after that their
// failures never end run (startDiagnostics).
func runWithAdmin(ctx context.Context, log *slog.Logger, addrs adminAddresses, ready func() (bool, []string),
	run func(context.Context) error, collectors ...prometheus.Collector) error {
	diag := admin.NewDiagnostics(log)
	reg := metrics.NewRegistry()
	reg.MustRegister(append(collectors, metrics.ReadyGauge(ready), diagnosticsCollector{diag})...)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	servers := []diagnosticServer{metricsServer(diag, addrs.metrics, reg, ready, log, metrics.WithShutdownTimeout(2*time.Second))}
	if addrs.pprof != "" {
		servers = append(servers, pprofServer(diag, addrs.pprof, log))
	}
	if err := startDiagnostics(g, gctx, diag, servers...); err != nil {
		return err
	}
	g.Go(func() error {
		defer cancel() // the servers stop with run
		return run(gctx)
	})
	return g.Wait()
}

// controllerRESTConfig loads kubeconfig, or the in-cluster configuration.
func controllerRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig and not in a cluster: %w", err)
		}
		return rc, nil
	}
	return restConfig(kubeconfig)
}
