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
