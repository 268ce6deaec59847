package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// ReadyGauge returns sllbrd_ready, evaluated at scrape time from ready (the
// same function Server's /readyz answers from).
func ReadyGauge(ready func() (bool, []string)) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sllbrd_ready",
		Help: "Whether sllbrd is ready (1) or not (0), as /readyz reports.",
	}, func() float64 {
		ok, _ := ready()
		return boolGauge(ok)
	})
}

// SourceInSyncGauge returns sllbrd_config_source_in_sync, evaluated at
// scrape time from inSync: 0 while the API server is unreachable or its
// watches have not resumed (sllbrd serves its last state meanwhile).
func SourceInSyncGauge(inSync func() (bool, string)) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sllbrd_config_source_in_sync",
		Help: "Whether the configuration source follows the API server (1) or sllbrd serves its last state without it (0); always 1 with --manifests.",
	}, func() float64 {
		ok, _ := inSync()
		return boolGauge(ok)
	})
}

// NewRegistry returns a registry holding the standard Go runtime and process
// collectors; register sllbrd's collectors on it.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}
