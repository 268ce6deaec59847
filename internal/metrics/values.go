package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// errorLabel turns a decode error ("packet: bad IPv4 header length") into a
// label value ("bad_ipv4_header_length"): the package prefix goes, the rest
// is lower snake case.
func errorLabel(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return snake(msg)
}

// snake lower-cases s and joins its runs of letters and digits with "_".
func snake(s string) string {
	var b strings.Builder
	pendingSep := false
	for _, r := range strings.ToLower(s) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			if pendingSep && b.Len() > 0 {
				b.WriteByte('_')
			}
			pendingSep = false
			b.WriteRune(r)
			continue
		}
		pendingSep = true
	}
	return b.String()
}

// counter returns a constant counter; the value is a uint64 counter read now.
func counter(d *prometheus.Desc, v uint64, labels ...string) prometheus.Metric {
	return constMetric(d, prometheus.CounterValue, float64(v), labels...)
}

// gauge returns a constant gauge.
func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return constMetric(d, prometheus.GaugeValue, v, labels...)
}

// constMetric never panics: a metric that cannot be made (a label value
// that is not UTF-8, say) becomes an invalid metric, which the registry
// reports as a scrape error while serving the rest.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// boolGauge is 1 for true, 0 for false.
func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
