package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/dataplane/fragment"
)

// EngineStats is what EngineCollector reads; *dataplane.Engine implements it.
type EngineStats interface {
	ReasonCount(r dataplane.Reason) (packets, bytes uint64)
	EachDecodeError(f func(err error, packets uint64))
	EachRoute(f func(route, service string, c dataplane.Count))
	EachEndpoint(f func(service string, id int, addr string, c dataplane.Count))
	FragmentStats() fragment.Stats
	Generation() uint64
}

var (
	reasonPacketsDesc = prometheus.NewDesc("sllbrd_packets_total",
		"Packets decided by the engine, by the reason of their verdict.", []string{"reason"}, nil)
	reasonBytesDesc = prometheus.NewDesc("sllbrd_bytes_total",
		"Bytes (wire length) decided by the engine, by the reason of their verdict.", []string{"reason"}, nil)
	routePacketsDesc = prometheus.NewDesc("sllbrd_route_packets_total",
		"Packets that matched a route (a removed route's series is deleted after twice the fragment lifetime).", []string{"route", "service"}, nil)
	routeBytesDesc = prometheus.NewDesc("sllbrd_route_bytes_total",
		"Bytes that matched a route (a removed route's series is deleted after twice the fragment lifetime).", []string{"route", "service"}, nil)
	endpointPacketsDesc = prometheus.NewDesc("sllbrd_endpoint_packets_total",
		"Packets sent to an endpoint address (a removed endpoint's series is deleted after twice the fragment lifetime).", []string{"service", "id", "address"}, nil)
	endpointBytesDesc = prometheus.NewDesc("sllbrd_endpoint_bytes_total",
		"Bytes sent to an endpoint address (a removed endpoint's series is deleted after twice the fragment lifetime).", []string{"service", "id", "address"}, nil)
	undecodableDesc = prometheus.NewDesc("sllbrd_undecodable_packets_total",
		"Packets dropped as undecodable, by decode error.", []string{"error"}, nil)
	fragmentsDesc = prometheus.NewDesc("sllbrd_fragments_total",
		"Fragment table operations by result: hit and miss for later fragments, held and "+
			"released or expired for later fragments parked before their first, stored for first fragments.",
		[]string{"result"}, nil)
	fragmentEvictionsDesc = prometheus.NewDesc("sllbrd_fragment_evictions_total",
		"Live fragment table entries pushed out by a full set.", nil, nil)
	engineGenerationDesc = prometheus.NewDesc("sllbrd_config_generation",
		"Generation of the configuration committed to the decision engine (0: none yet).", nil, nil)
)

// EngineCollector exports the decision engine's counters.
type EngineCollector struct {
	engine EngineStats
}

// NewEngineCollector returns a collector reading e at every scrape.
func NewEngineCollector(e EngineStats) *EngineCollector {
	return &EngineCollector{engine: e}
}

// Describe implements prometheus.Collector.
func (c *EngineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		reasonPacketsDesc, reasonBytesDesc, routePacketsDesc, routeBytesDesc,
		endpointPacketsDesc, endpointBytesDesc, undecodableDesc, fragmentsDesc,
		fragmentEvictionsDesc, engineGenerationDesc,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *EngineCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.engine
	for _, r := range dataplane.Reasons() {
		packets, bytes := e.ReasonCount(r)
		ch <- counter(reasonPacketsDesc, packets, r.String())
		ch <- counter(reasonBytesDesc, bytes, r.String())
	}
	e.EachRoute(func(route, service string, cnt dataplane.Count) {
		ch <- counter(routePacketsDesc, cnt.Packets, route, service)
		ch <- counter(routeBytesDesc, cnt.Bytes, route, service)
	})
	e.EachEndpoint(func(service string, id int, addr string, cnt dataplane.Count) {
		ids := strconv.Itoa(id)
		ch <- counter(endpointPacketsDesc, cnt.Packets, service, ids, addr)
		ch <- counter(endpointBytesDesc, cnt.Bytes, service, ids, addr)
	})
	e.EachDecodeError(func(err error, packets uint64) {
		ch <- counter(undecodableDesc, packets, errorLabel(err))
	})
	collectFragments(ch, e.FragmentStats())
	ch <- gauge(engineGenerationDesc, float64(e.Generation()))
}

func collectFragments(ch chan<- prometheus.Metric, s fragment.Stats) {
	for _, r := range []struct {
		result string
		n      uint64
	}{
		{"hit", s.Hits}, {"miss", s.Misses}, {"held", s.Held},
		{"released", s.Released}, {"expired", s.Expired}, {"stored", s.Stored},
	} {
		ch <- counter(fragmentsDesc, r.n, r.result)
	}
	ch <- counter(fragmentEvictionsDesc, s.Evictions)
}
