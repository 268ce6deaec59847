package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// ApplyBuckets are the buckets of sllbrd_target_apply_duration_seconds:
// 100 us to 2.5 s.
var ApplyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5}

// Target records what `sllbrd target` does; it implements
// kube/targetpod.Metrics and is a prometheus.Collector. Its methods are safe
// for concurrent use.
type Target struct {
	vips        *prometheus.GaugeVec
	nextHops    *prometheus.GaugeVec
	kept        *prometheus.GaugeVec
	conflicts   prometheus.Gauge
	applies     *prometheus.CounterVec
	applyErrors prometheus.Counter
	duration    prometheus.Histogram
	generation  prometheus.Gauge
	writes      *prometheus.CounterVec
}

// NewTarget returns a Target with nothing applied.
func NewTarget() *Target {
	return &Target{
		vips: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sllbrd_target_vips",
			Help: "VIPs of a Gateway in place in the pod (local address and rule).",
		}, []string{"gateway"}),
		nextHops: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sllbrd_target_next_hops",
			Help: "Next hops (SLLBR pods) of a Gateway's VIP-sourced traffic in place in the pod, by family.",
		}, []string{"gateway", "family"}),
		kept: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sllbrd_target_next_hops_kept",
			Help: "1 while a Gateway has no ready SLLBR pod of a family and its last next hops are kept.",
		}, []string{"gateway", "family"}),
		conflicts: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sllbrd_target_conflicts",
			Help: "Foreign network configuration in the way of the desired one at the last apply (left as it is).",
		}),
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sllbrd_target_applies_total",
			Help: "Applies of the desired network configuration, by result (success, error).",
		}, []string{"result"}),
		applyErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sllbrd_target_apply_errors_total",
			Help: "Applies that failed (retried with backoff).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sllbrd_target_apply_duration_seconds",
			Help:    "Time to read the namespace's configuration and apply the desired one.",
			Buckets: ApplyBuckets,
		}),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sllbrd_target_applied_generation",
			Help: "Generation of the desired network configuration last applied without error.",
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sllbrd_target_status_writes_total",
			Help: "Writes of the status annotation, by result (success, error).",
		}, []string{"result"}),
	}
}

// ObserveApply records one apply.
func (t *Target) ObserveApply(o targetnet.Outcome) {
	t.duration.Observe(o.Took.Seconds())
	if o.Err != nil {
		t.applies.WithLabelValues(ResultError).Inc()
		t.applyErrors.Inc()
	} else {
		t.applies.WithLabelValues(ResultSuccess).Inc()
		t.generation.Set(float64(o.Generation))
	}
	t.conflicts.Set(float64(len(o.Result.Conflicts)))
	t.vips.Reset()
	t.nextHops.Reset()
	t.kept.Reset()
	for _, g := range o.Result.Gateways {
		t.vips.WithLabelValues(g.Name).Set(float64(len(g.VIPs)))
		for _, f := range targetnet.Families {
			n := 0
			for _, h := range g.NextHops {
				if h.Is4() == (f == targetnet.IPv4) {
					n++
				}
			}
			t.nextHops.WithLabelValues(g.Name, f.String()).Set(float64(n))
			t.kept.WithLabelValues(g.Name, f.String()).Set(0)
		}
		for _, f := range g.Kept {
			t.kept.WithLabelValues(g.Name, f.String()).Set(1)
		}
	}
}

// ObserveStatusWrite records one write of the status annotation.
func (t *Target) ObserveStatusWrite(err error) {
	result := ResultSuccess
	if err != nil {
		result = ResultError
	}
	t.writes.WithLabelValues(result).Inc()
}

// Describe implements prometheus.Collector.
func (t *Target) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range t.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (t *Target) Collect(ch chan<- prometheus.Metric) {
	for _, c := range t.collectors() {
		c.Collect(ch)
	}
}

func (t *Target) collectors() []prometheus.Collector {
	return []prometheus.Collector{t.vips, t.nextHops, t.kept, t.conflicts, t.applies, t.applyErrors, t.duration, t.generation, t.writes}
}
