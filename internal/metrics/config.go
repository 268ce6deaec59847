package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ApplyLatencyBuckets are the buckets of sllbrd_config_apply_latency_seconds:
// 1 ms to 10 s.
var ApplyLatencyBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// Config records configuration applies. Its methods are safe for concurrent
// use; it is a prometheus.Collector.
type Config struct {
	applies       *prometheus.CounterVec
	compFailures  *prometheus.CounterVec
	compFailing   *prometheus.GaugeVec
	latency       prometheus.Histogram
	lastGen       prometheus.Gauge
	problems      *prometheus.GaugeVec
	mu            sync.Mutex
	problemsKinds map[string]bool // every kind ever reported, kept at 0 when gone
}

// NewConfig returns a Config with every series at zero.
func NewConfig() *Config {
	c := &Config{
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sllbrd_config_apply_total",
			Help: "Configuration applies to the data plane, by result (success, failure).",
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sllbrd_config_apply_latency_seconds",
			Help:    "Time from a configuration change being seen (file or API event) to the data plane having applied it.",
			Buckets: ApplyLatencyBuckets,
		}),
		lastGen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sllbrd_config_last_applied_generation",
			Help: "Generation of the last configuration applied successfully (0: none yet).",
		}),
		problems: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sllbrd_config_problems",
			Help: "Parts of the configuration left out because they are invalid, by kind.",
		}, []string{"kind"}),
		compFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sllbrd_config_component_failures_total",
			Help: "Failed attempts to apply a part of the configuration, by component (dataplane, gateway_routers, vip_announcement); each is retried with backoff.",
		}, []string{"component"}),
		compFailing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sllbrd_config_component_failing",
			Help: "1 while the last attempt to apply a part of the configuration failed, by component.",
		}, []string{"component"}),
		problemsKinds: make(map[string]bool),
	}
	c.applies.WithLabelValues("success")
	c.applies.WithLabelValues("failure")
	return c
}

// ObserveApply records one apply of configuration generation: err is its
// outcome, changeSeen when the change that led to it was first seen and
// applied when the data plane finished applying it. The latency is observed
// for successful applies with a known changeSeen only.
func (c *Config) ObserveApply(generation uint64, changeSeen, applied time.Time, err error) {
	if err != nil {
		c.applies.WithLabelValues("failure").Inc()
		return
	}
	c.applies.WithLabelValues("success").Inc()
	c.lastGen.Set(float64(generation))
	if !changeSeen.IsZero() && !applied.Before(changeSeen) {
		c.latency.Observe(applied.Sub(changeSeen).Seconds())
	}
}

// ObserveComponent records the outcome of one component's part of an apply.
// component is one of a fixed set named by the caller.
func (c *Config) ObserveComponent(component string, err error) {
	c.compFailures.WithLabelValues(component).Add(0) // the series exists from the first apply
	if err != nil {
		c.compFailures.WithLabelValues(component).Inc()
		c.compFailing.WithLabelValues(component).Set(1)
		return
	}
	c.compFailing.WithLabelValues(component).Set(0)
}

// SetProblems replaces the problem counts; kinds reported before and absent
// now drop to 0.
func (c *Config) SetProblems(byKind map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for kind := range c.problemsKinds {
		if _, ok := byKind[kind]; !ok {
			c.problems.WithLabelValues(kind).Set(0)
		}
	}
	for kind, n := range byKind {
		c.problemsKinds[kind] = true
		c.problems.WithLabelValues(kind).Set(float64(n))
	}
}

// Describe implements prometheus.Collector.
func (c *Config) Describe(ch chan<- *prometheus.Desc) {
	c.applies.Describe(ch)
	c.compFailures.Describe(ch)
	c.compFailing.Describe(ch)
	c.latency.Describe(ch)
	c.lastGen.Describe(ch)
	c.problems.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Config) Collect(ch chan<- prometheus.Metric) {
	c.applies.Collect(ch)
	c.compFailures.Collect(ch)
	c.compFailing.Collect(ch)
	c.latency.Collect(ch)
	c.lastGen.Collect(ch)
	c.problems.Collect(ch)
}
