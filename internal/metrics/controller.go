package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Reconcile results, the values of the result label of
// sllbrd_controller_reconciles_total.
const (
	ResultSuccess  = "success"
	ResultConflict = "conflict" // a write lost a race; retried
	ResultStale    = "stale"    // the cache was behind the controller's own writes; retried
	ResultError    = "error"
)

// ReconcileBuckets are the buckets of
// sllbrd_controller_reconcile_duration_seconds: 100 us to 10 s.
var ReconcileBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// Controller records what `sllbrd controller` does; it implements
// kube/controller.Metrics and is a prometheus.Collector. Its methods are
// safe for concurrent use.
type Controller struct {
	leader     prometheus.Gauge
	reconciles *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	endpoints  *prometheus.GaugeVec
	overLimit  *prometheus.GaugeVec
	skipped    *prometheus.GaugeVec
	held       *prometheus.GaugeVec
}

// NewController returns a Controller with the leader gauge at 0.
func NewController() *Controller {
	return &Controller{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sllbrd_controller_leader",
			Help: "Whether this controller replica holds the leader Lease and writes (1) or stands by (0).",
		}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sllbrd_controller_reconciles_total",
			Help: "Reconciles of one object, by kind and result (success, conflict, stale, error).",
		}, []string{"kind", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sllbrd_controller_reconcile_duration_seconds",
			Help:    "Time to reconcile one object, writes included, by kind.",
			Buckets: ReconcileBuckets,
		}, []string{"kind"}),
		endpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sllbrd_controller_service_endpoints",
			Help: "Pods of a Service that have an endpoint identifier.",
		}, []string{"service"}),
		overLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sllbrd_controller_service_pods_over_limit",
			Help: "Pods of a Service left out because all its identifiers (max-endpoints) are in use.",
		}, []string{"service"}),
		skipped: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sllbrd_controller_service_pods_skipped",
			Help: "Pods a Service selects that are not endpoints, by reason (no or invalid network-status, no address on the Gateway's networks).",
		}, []string{"service", "reason"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sllbrd_controller_service_endpoints_held",
			Help: "Endpoints of a Service kept ready by the readiness hold: their pod is not ready, with no container restarted, for less than its probe time (as after a kubelet restart).",
		}, []string{"service"}),
	}
}

// SetLeader records whether this replica leads.
func (c *Controller) SetLeader(leading bool) { c.leader.Set(boolGauge(leading)) }

// ObserveReconcile records one reconcile of an object of kind.
func (c *Controller) ObserveReconcile(kind, result string, took time.Duration) {
	c.reconciles.WithLabelValues(kind, result).Inc()
	c.duration.WithLabelValues(kind).Observe(took.Seconds())
}

// SetService records a Service's endpoints, pods over the limit and pods
// skipped by reason.
func (c *Controller) SetService(service string, endpoints, overLimit int, skipped map[string]int) {
	c.endpoints.WithLabelValues(service).Set(float64(endpoints))
	c.overLimit.WithLabelValues(service).Set(float64(overLimit))
	for reason, n := range skipped {
		c.skipped.WithLabelValues(service, reason).Set(float64(n))
	}
}

// SetServiceHeld records how many endpoints of a Service the readiness hold
// keeps ready.
func (c *Controller) SetServiceHeld(service string, held int) {
	c.held.WithLabelValues(service).Set(float64(held))
}

// ForgetService drops the series of a Service that is gone or no longer
// handled.
func (c *Controller) ForgetService(service string) {
	c.endpoints.DeleteLabelValues(service)
	c.overLimit.DeleteLabelValues(service)
	c.skipped.DeletePartialMatch(prometheus.Labels{"service": service})
	c.held.DeleteLabelValues(service)
}

// Describe implements prometheus.Collector.
func (c *Controller) Describe(ch chan<- *prometheus.Desc) {
	for _, col := range c.collectors() {
		col.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *Controller) Collect(ch chan<- prometheus.Metric) {
	for _, col := range c.collectors() {
		col.Collect(ch)
	}
}

func (c *Controller) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.leader, c.reconciles, c.duration, c.endpoints, c.overLimit, c.skipped, c.held}
}
