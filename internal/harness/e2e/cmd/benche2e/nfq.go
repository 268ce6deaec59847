package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
)

// nfqCounters are sllbrd's nfqueue counters, summed over its queues.
type nfqCounters struct {
	packets, batches           float64 // received packets, receive syscalls with data
	accepted, dropped          float64 // verdicts
	kernelDropped, userDropped float64 // kernel: queue full, socket full
}

// nfqMetrics maps each counter to its metric name and, for verdicts, the
// label that selects the action.
var nfqMetrics = []struct {
	name, label string
	field       func(*nfqCounters) *float64
}{
	{"sllbrd_nfqueue_packets_total", "", func(c *nfqCounters) *float64 { return &c.packets }},
	{"sllbrd_nfqueue_batches_total", "", func(c *nfqCounters) *float64 { return &c.batches }},
	{"sllbrd_nfqueue_verdicts_total", `action="accept"`, func(c *nfqCounters) *float64 { return &c.accepted }},
	{"sllbrd_nfqueue_verdicts_total", `action="drop"`, func(c *nfqCounters) *float64 { return &c.dropped }},
	{"sllbrd_nfqueue_kernel_dropped_total", "", func(c *nfqCounters) *float64 { return &c.kernelDropped }},
	{"sllbrd_nfqueue_kernel_user_dropped_total", "", func(c *nfqCounters) *float64 { return &c.userDropped }},
}

// readNFQ reads the counters from one scrape of the instance's /metrics.
func readNFQ(inst *e2e.Instance) (nfqCounters, error) {
	status, body, err := inst.Get("/metrics")
	if err != nil {
		return nfqCounters{}, fmt.Errorf("metrics of sllbrd in %s: %w", inst.Node, err)
	}
	if status != 200 {
		return nfqCounters{}, fmt.Errorf("metrics of sllbrd in %s: HTTP %d", inst.Node, status)
	}
	return parseNFQ(body)
}

// parseNFQ sums every sample of each counter in a Prometheus text body.
// Verdict counters may be absent (no verdict of that action yet); the
// others must be exported.
func parseNFQ(body string) (nfqCounters, error) {
	var c nfqCounters
	for _, m := range nfqMetrics {
		v, found, err := sumSamples(body, m.name, m.label)
		if err != nil {
			return c, err
		}
		if !found && m.label == "" {
			return c, fmt.Errorf("metric %s: not exported", m.name)
		}
		*m.field(&c) = v
	}
	return c, nil
}

// sumSamples sums the values of the samples of metric name that carry
// label (a `key="value"` pair; empty: any).
func sumSamples(body, name, label string) (sum float64, found bool, err error) {
	for line := range strings.SplitSeq(body, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if labels, _, _ := strings.Cut(rest, "}"); label != "" && !strings.Contains(labels, label) {
			continue
		}
		f := strings.Fields(rest)
		v, perr := strconv.ParseFloat(f[len(f)-1], 64)
		if perr != nil {
			return 0, false, fmt.Errorf("metric line %q: %w", line, perr)
		}
		sum, found = sum+v, true
	}
	return sum, found, nil
}

// minus is c - d, field by field.
func (c nfqCounters) minus(d nfqCounters) nfqCounters {
	for _, m := range nfqMetrics {
		*m.field(&c) -= *m.field(&d)
	}
	return c
}

// perBatch is the mean number of packets one receive syscall returned.
func (c nfqCounters) perBatch() float64 {
	if c.batches == 0 {
		return 0
	}
	return c.packets / c.batches
}
