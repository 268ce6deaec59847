package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// TargetNodeSource is the node daemon's view of its node, read at each
// scrape; kube/targetnode's Daemon implements it.
type TargetNodeSource interface {
	// PodStates counts the pods the daemon follows by state, every state
	// of the daemon's fixed set present (0 included), each pod in one.
	PodStates() map[string]int
	// RuntimeUp reports whether the container runtime (CRI) answered the
	// daemon's last probe (false before the first).
	RuntimeUp() bool
	// NamespaceUnavailable counts, since start, the applies skipped
	// because a pod had no network namespace (no ready sandbox).
	NamespaceUnavailable() uint64
}

// TargetNode is what `sllbrd target --node` exports: the metrics of a
// Target fed with the applies and status writes of every pod of the node
// (kube/targetnode sums its gauges over the pods), without
// sllbrd_target_applied_generation, and the node's own metrics read from
// a TargetNodeSource. A generation is one pod's, and the pods of a node
// are at different ones: no single number is true of a node, so the gauge
// is left out rather than exported as a number that means nothing. It is a
// prometheus.Collector.
type TargetNode struct {
	target []prometheus.Collector
	node   *targetNodeCollector
}

// NewTargetNode returns the node daemon's collector over t (given to the
// daemon as its targetpod.Metrics) and src (the daemon).
func NewTargetNode(t *Target, src TargetNodeSource) *TargetNode {
	var target []prometheus.Collector
	for _, c := range t.collectors() {
		if c != prometheus.Collector(t.generation) {
			target = append(target, c)
		}
	}
	return &TargetNode{target: target, node: newTargetNodeCollector(src)}
}

// Describe implements prometheus.Collector.
func (t *TargetNode) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range t.target {
		c.Describe(ch)
	}
	t.node.Describe(ch)
}

// Collect implements prometheus.Collector.
func (t *TargetNode) Collect(ch chan<- prometheus.Metric) {
	for _, c := range t.target {
		c.Collect(ch)
	}
	t.node.Collect(ch)
}

// targetNodeCollector exports the node's own metrics from a
// TargetNodeSource.
type targetNodeCollector struct {
	src         TargetNodeSource
	pods        *prometheus.Desc
	runtimeUp   *prometheus.Desc
	unavailable *prometheus.Desc
}

func newTargetNodeCollector(src TargetNodeSource) *targetNodeCollector {
	return &targetNodeCollector{
		src: src,
		pods: prometheus.NewDesc("sllbrd_target_pods",
			"Pods of the node the node daemon follows, by state (applied, not_ready, no_sandbox, refused); each pod in exactly one.",
			[]string{"state"}, nil),
		runtimeUp: prometheus.NewDesc("sllbrd_target_runtime_up",
			"1 while the container runtime (CRI) answered the node daemon's last probe, 0 otherwise.", nil, nil),
		unavailable: prometheus.NewDesc("sllbrd_target_namespace_unavailable_total",
			"Applies skipped because the pod had no network namespace (no ready sandbox); each is tried again with backoff.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *targetNodeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pods
	ch <- c.runtimeUp
	ch <- c.unavailable
}

// Collect implements prometheus.Collector.
func (c *targetNodeCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.src.PodStates() {
		ch <- gauge(c.pods, float64(n), state)
	}
	ch <- gauge(c.runtimeUp, boolGauge(c.src.RuntimeUp()))
	ch <- counter(c.unavailable, c.src.NamespaceUnavailable())
}
