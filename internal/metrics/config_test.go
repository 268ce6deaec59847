package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

const configHeaders = `
# HELP sllbrd_config_apply_total Configuration applies to the data plane, by result (success, failure).
# TYPE sllbrd_config_apply_total counter
# HELP sllbrd_config_last_applied_generation Generation of the last configuration applied successfully (0: none yet).
# TYPE sllbrd_config_last_applied_generation gauge
# HELP sllbrd_config_problems Parts of the configuration left out because they are invalid, by kind.
# TYPE sllbrd_config_problems gauge
`

func TestConfigObserveApply(t *testing.T) {
	seen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	type apply struct {
		gen           uint64
		seen, applied time.Time
		err           error
	}
	for _, tc := range []struct {
		name          string
		applies       []apply
		problems      []map[string]int
		want          string
		latencyCount  uint64
		latencySumSec float64
	}{
		{name: "nothing yet", want: configHeaders + `
sllbrd_config_apply_total{result="failure"} 0
sllbrd_config_apply_total{result="success"} 0
sllbrd_config_last_applied_generation 0
`},
		{name: "success then failure keeps the applied generation",
			applies: []apply{
				{3, seen, seen.Add(20 * time.Millisecond), nil},
				{4, seen, seen.Add(time.Second), errors.New("nft: busy")},
			},
			want: configHeaders + `
sllbrd_config_apply_total{result="failure"} 1
sllbrd_config_apply_total{result="success"} 1
sllbrd_config_last_applied_generation 3
`, latencyCount: 1, latencySumSec: 0.02},
		{name: "unknown or backwards change time observes no latency",
			applies: []apply{{5, time.Time{}, seen, nil}, {6, seen, seen.Add(-time.Second), nil}},
			want: configHeaders + `
sllbrd_config_apply_total{result="failure"} 0
sllbrd_config_apply_total{result="success"} 2
sllbrd_config_last_applied_generation 6
`},
		{name: "problems that go away drop to zero",
			problems: []map[string]int{{"invalid_route": 2, "unknown_service": 1}, {"unknown_service": 4}},
			want: configHeaders + `
sllbrd_config_apply_total{result="failure"} 0
sllbrd_config_apply_total{result="success"} 0
sllbrd_config_last_applied_generation 0
sllbrd_config_problems{kind="invalid_route"} 0
sllbrd_config_problems{kind="unknown_service"} 4
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConfig()
			for _, a := range tc.applies {
				c.ObserveApply(a.gen, a.seen, a.applied, a.err)
			}
			for _, p := range tc.problems {
				c.SetProblems(p)
			}
			err := testutil.CollectAndCompare(c, strings.NewReader(tc.want),
				"sllbrd_config_apply_total", "sllbrd_config_last_applied_generation", "sllbrd_config_problems")
			if err != nil {
				t.Fatal(err)
			}
			count, sum := histogramOf(t, c)
			if count != tc.latencyCount || sum < tc.latencySumSec-1e-9 || sum > tc.latencySumSec+1e-9 {
				t.Fatalf("latency histogram count %d sum %g, want %d and %g", count, sum, tc.latencyCount, tc.latencySumSec)
			}
		})
	}
}

// histogramOf returns the count and sum of sllbrd_config_apply_latency_seconds.
func histogramOf(t *testing.T, c *Config) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := c.latency.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestApplyLatencyBuckets(t *testing.T) {
	const h = `
# HELP sllbrd_config_apply_latency_seconds Time from a configuration change being seen (file or API event) to the data plane having applied it.
# TYPE sllbrd_config_apply_latency_seconds histogram
sllbrd_config_apply_latency_seconds_bucket{le="0.001"} 0
sllbrd_config_apply_latency_seconds_bucket{le="0.0025"} 1
sllbrd_config_apply_latency_seconds_bucket{le="0.005"} 1
sllbrd_config_apply_latency_seconds_bucket{le="0.01"} 1
sllbrd_config_apply_latency_seconds_bucket{le="0.025"} 1
sllbrd_config_apply_latency_seconds_bucket{le="0.05"} 1
sllbrd_config_apply_latency_seconds_bucket{le="0.1"} 1
sllbrd_config_apply_latency_seconds_bucket{le="0.25"} 1
sllbrd_config_apply_latency_seconds_bucket{le="0.5"} 1
sllbrd_config_apply_latency_seconds_bucket{le="1"} 1
sllbrd_config_apply_latency_seconds_bucket{le="2.5"} 1
sllbrd_config_apply_latency_seconds_bucket{le="5"} 1
sllbrd_config_apply_latency_seconds_bucket{le="10"} 2
sllbrd_config_apply_latency_seconds_bucket{le="+Inf"} 3
sllbrd_config_apply_latency_seconds_sum 37.002
sllbrd_config_apply_latency_seconds_count 3
`
	c := NewConfig()
	now := time.Now()
	for _, d := range []time.Duration{2 * time.Millisecond, 7 * time.Second, 30 * time.Second} {
		c.ObserveApply(1, now, now.Add(d), nil)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(h), "sllbrd_config_apply_latency_seconds"); err != nil {
		t.Fatal(err)
	}
}

func TestConfigObserveComponent(t *testing.T) {
	c := NewConfig()
	c.ObserveComponent("dataplane", nil)
	c.ObserveComponent("gateway_routers", errors.New("add peer: no"))
	c.ObserveComponent("gateway_routers", errors.New("add peer: no"))
	want := `
# HELP sllbrd_config_component_failing 1 while the last attempt to apply a part of the configuration failed, by component.
# TYPE sllbrd_config_component_failing gauge
sllbrd_config_component_failing{component="dataplane"} 0
sllbrd_config_component_failing{component="gateway_routers"} 1
# HELP sllbrd_config_component_failures_total Failed attempts to apply a part of the configuration, by component (dataplane, gateway_routers, vip_announcement); each is retried with backoff.
# TYPE sllbrd_config_component_failures_total counter
sllbrd_config_component_failures_total{component="dataplane"} 0
sllbrd_config_component_failures_total{component="gateway_routers"} 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"sllbrd_config_component_failing", "sllbrd_config_component_failures_total"); err != nil {
		t.Fatal(err)
	}
	c.ObserveComponent("gateway_routers", nil)
	if err := testutil.CollectAndCompare(c, strings.NewReader(strings.Replace(want,
		`sllbrd_config_component_failing{component="gateway_routers"} 1`, `sllbrd_config_component_failing{component="gateway_routers"} 0`, 1)),
		"sllbrd_config_component_failing", "sllbrd_config_component_failures_total"); err != nil {
		t.Fatal(err)
	}
}
