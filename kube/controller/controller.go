package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/apiserver"
)

// Defaults of the options.
const (
	DefaultTemplateConfigMap = "sllbrd-templates"
	DefaultLeaseName         = "sllbrd-controller"
	DefaultLeaseDuration     = 15 * time.Second
	DefaultRenewDeadline     = 10 * time.Second
	DefaultRetryPeriod       = 2 * time.Second
	DefaultWorkers           = 2
	// DefaultReadinessHoldMax caps the readiness hold (endpoints.Hold).
	DefaultReadinessHoldMax = 30 * time.Second
	// ReportingController names the controller in its Events.
	ReportingController = "sllbrd-controller"
)

// Metrics receives what the controller measures; internal/metrics.Controller
// implements it. Methods are called from several goroutines.
type Metrics interface {
	SetLeader(leading bool)
	// ObserveReconcile records one reconcile; result is one of "success",
	// "conflict", "stale" or "error".
	ObserveReconcile(kind, result string, took time.Duration)
	// SetService records a Service's endpoints (pods with an identifier),
	// pods left out past max-endpoints, and selected pods skipped by fault.
	SetService(service string, endpoints, overLimit int, skipped map[string]int)
	// SetServiceHeld records how many of a Service's endpoints the
	// readiness hold keeps ready.
	SetServiceHeld(service string, held int)
	ForgetService(service string)
}

// LeaderElection configures the Lease that elects the replica that writes.
type LeaderElection struct {
	Enabled                                   bool
	LeaseName                                 string
	Identity                                  string // default: hostname + random suffix
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Option configures a Controller.
type Option func(*Controller)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *Controller) { c.log = l } }

// WithMetrics sets where measurements go (default: nowhere).
func WithMetrics(m Metrics) Option { return func(c *Controller) { c.metrics = m } }

// WithLeaderElection replaces the default leader election (enabled, Lease
// sllbrd-controller, 15s/10s/2s).
func WithLeaderElection(le LeaderElection) Option { return func(c *Controller) { c.election = le } }

// WithTemplate sets the ConfigMap holding the SLLBR Deployment template
// (key deployment.yaml) and the template used while it does not exist.
func WithTemplate(configMap string, fallback []byte) Option {
	return func(c *Controller) { c.templateConfigMap, c.defaultTemplate = configMap, fallback }
}

// WithWorkers sets how many keys are reconciled in parallel (default 2; one
// key is never reconciled by two workers at once).
func WithWorkers(n int) Option { return func(c *Controller) { c.workers = n } }

// WithReadinessHold caps the readiness hold (default
// DefaultReadinessHoldMax; 0 disables it): an endpoint listed ready stays
// ready while its pod is not ready only for want of a probe result, as
// after a kubelet restart (endpoints.Hold).
func WithReadinessHold(max time.Duration) Option { return func(c *Controller) { c.holdMax = max } }

// Controller is the controller of one namespace.
type Controller struct {
	namespace         string
	log               *slog.Logger
	metrics           Metrics
	election          LeaderElection
	templateConfigMap string
	defaultTemplate   []byte
	workers           int
	holdMax           time.Duration
	image             string  // of SLLBR pods whose template names none; "" for none
	imagePod          *podRef // where image comes from when Run starts

	kube     kubernetes.Interface
	gateways gatewayclient.Interface
	crds     rest.Interface

	inf      *informers
	queue    workqueue.TypedRateLimitingInterface[Key]
	reconcil map[Kind]func(context.Context, string) error
	events   *reporter
	slices   *sliceTracker
	holds    *holdLog

	synced  atomic.Bool
	leading atomic.Bool
	runOnce sync.Once
}

// New returns the controller of namespace, reached with cfg. It does not
// contact the server; Run does.
func New(cfg *rest.Config, namespace string, opts ...Option) (*Controller, error) {
	if namespace == "" {
		return nil, errors.New("controller: namespace is empty")
	}
	c := &Controller{
		namespace: namespace, log: slog.Default(), metrics: noMetrics{},
		election: LeaderElection{Enabled: true, LeaseName: DefaultLeaseName,
			LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod},
		templateConfigMap: DefaultTemplateConfigMap,
		workers:           DefaultWorkers,
		holdMax:           DefaultReadinessHoldMax,
		slices:            newSliceTracker(),
		holds:             newHoldLog(),
		events:            newReporter(),
	}
	for _, o := range opts {
		o(c)
	}
	if err := c.checkOptions(); err != nil {
		return nil, err
	}
	var err error
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("controller: kubernetes client: %w", err)
	}
	if c.gateways, err = gatewayclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("controller: gateway-api client: %w", err)
	}
	if c.crds, err = v1alpha1.NewRESTClient(cfg); err != nil {
		return nil, fmt.Errorf("controller: %s client: %w", v1alpha1.SchemeGroupVersion, err)
	}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[Key](5*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[Key]{Name: "sllbrd-controller"})
	c.reconcil = map[Kind]func(context.Context, string) error{
		KindGatewayClass:  c.reconcileGatewayClass,
		KindGateway:       c.reconcileGateway,
		KindService:       c.reconcileService,
		KindL34Route:      c.reconcileL34Route,
		KindGatewayRouter: c.reconcileGatewayRouter,
		KindPod:           c.reconcilePod,
	}
	c.inf = c.newInformers()
	return c, nil
}

func (c *Controller) checkOptions() error {
	le := &c.election
	if le.Identity == "" {
		host, _ := os.Hostname()
		le.Identity = host + "_" + string(uuid.NewUUID())
	}
	switch {
	case c.workers < 1:
		return fmt.Errorf("controller: %d workers, want at least 1", c.workers)
	case c.holdMax < 0:
		return fmt.Errorf("controller: readiness hold cap %v is negative (0 disables the hold)", c.holdMax)
	case c.templateConfigMap == "":
		return errors.New("controller: the template ConfigMap name is empty")
	case strings.ContainsFunc(c.image, unicode.IsSpace):
		return fmt.Errorf("controller: image %q contains white space", c.image)
	case le.Enabled && le.LeaseName == "":
		return errors.New("controller: the Lease name is empty")
	case le.Enabled && !(le.LeaseDuration > le.RenewDeadline && le.RenewDeadline > le.RetryPeriod && le.RetryPeriod > 0):
		return fmt.Errorf("controller: want lease duration (%v) > renew deadline (%v) > retry period (%v) > 0",
			le.LeaseDuration, le.RenewDeadline, le.RetryPeriod)
	}
	return c.imagePod.check()
}

// Ready reports whether the caches have synced (a replica that is not the
// leader is ready: it can take over at once).
func (c *Controller) Ready() (bool, []string) {
	if !c.synced.Load() {
		return false, []string{"waiting for the first sync with the API server"}
	}
	return true, nil
}

// Leading reports whether this replica holds the Lease (always true
// without leader election, once synced).
func (c *Controller) Leading() bool { return c.leading.Load() }

// Identity is this replica's name in the Lease.
func (c *Controller) Identity() string { return c.election.Identity }

// Run watches and, once synced and leading, reconciles until ctx ends. It
// returns nil when ctx ends, an error when the Lease is lost or the
// controller cannot start. A Controller runs once.
func (c *Controller) Run(ctx context.Context) error {
	err := errors.New("controller: Run called twice")
	c.runOnce.Do(func() { err = c.run(ctx) })
	return err
}

func (c *Controller) run(ctx context.Context) error {
	defer c.queue.ShutDown()
	if err := c.readImage(ctx); err != nil {
		return err
	}
	rec, stopEvents, err := apiserver.StartEventRecorder(context.WithoutCancel(ctx), c.kube, ReportingController)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	defer stopEvents()
	c.events.setRecorder(rec)
	infCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopInformers()
	c.inf.start(infCtx, &wg)
	if !cache.WaitForCacheSync(ctx.Done(), c.inf.hasSynced()...) {
		return nil
	}
	if err := c.checkImage(); err != nil {
		return err
	}
	c.synced.Store(true)
	c.log.Info("controller synced", "namespace", c.namespace, "identity", c.election.Identity)
	if !c.election.Enabled {
		c.lead(ctx)
		return nil
	}
	return c.elect(ctx)
}

type noMetrics struct{}

func (noMetrics) SetLeader(bool)                                 {}
func (noMetrics) ObserveReconcile(string, string, time.Duration) {}
func (noMetrics) SetService(string, int, int, map[string]int)    {}
func (noMetrics) SetServiceHeld(string, int)                     {}
func (noMetrics) ForgetService(string)                           {}
