package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/targetbfd"
)

// TargetBFD exports the target side's BFD sessions (internal/targetbfd):
// those of the sidecar's pod, or summed over the pods of the node daemon's
// node, read at each scrape. It is a prometheus.Collector.
type TargetBFD struct {
	stats                                                func() targetbfd.Stats
	sessions, socketErrors, unserved, transitions, fails *prometheus.Desc
	discards, leftOut, allDown                           *prometheus.Desc
}

// The values of sllbrd_target_bfd_failures_total's label what.
const (
	TargetBFDFailureServer  = "server"
	TargetBFDFailureSession = "session"
)

// NewTargetBFD returns the collector of stats (a targetbfd.Runner's Stats,
// or the node daemon's sum).
func NewTargetBFD(stats func() targetbfd.Stats) *TargetBFD {
	return &TargetBFD{
		stats: stats,
		sessions: prometheus.NewDesc("sllbrd_target_bfd_sessions",
			"BFD sessions of the target side with the SLLBR pods (one per next hop of a Gateway with liveness), by state.",
			[]string{"state"}, nil),
		socketErrors: prometheus.NewDesc("sllbrd_target_bfd_socket_errors",
			"BFD sessions of the target side whose last attempt to open or write their socket failed (tried again every second).", nil, nil),
		unserved: prometheus.NewDesc("sllbrd_target_bfd_next_hops_without_session",
			"Next hops of Gateways with liveness that have no BFD session: no interface of their family is known.", nil, nil),
		transitions: prometheus.NewDesc("sllbrd_target_bfd_transitions_total",
			"BFD session transitions of the target side into (up) and out of (down) state Up.", []string{"direction"}, nil),
		fails: prometheus.NewDesc("sllbrd_target_bfd_failures_total",
			"Failures of the target side's BFD: a server that could not start in its network namespace or stopped (server; started again), "+
				"a session the server refused to add, update or remove (session; tried again).", []string{"what"}, nil),
		discards: prometheus.NewDesc("sllbrd_target_bfd_discarded_packets_total",
			"BFD packets the target side received and no session took (no_session: from an address that is not a next hop), by reason.",
			[]string{"reason"}, nil),
		leftOut: prometheus.NewDesc("sllbrd_target_bfd_next_hops_down",
			"Next hops left out of their Gateway's routes because their BFD session is down (back as soon as it is up).", nil, nil),
		allDown: prometheus.NewDesc("sllbrd_target_bfd_all_next_hops_down_total",
			"Times every next hop of a family of a Gateway had its BFD session down, so that all were kept in the routes (never none).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *TargetBFD) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.sessions, c.socketErrors, c.unserved, c.transitions, c.fails, c.discards, c.leftOut, c.allDown} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *TargetBFD) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, st := range bfdStates {
		ch <- gauge(c.sessions, float64(s.Sessions[st.state]), st.label)
	}
	ch <- gauge(c.socketErrors, float64(s.SocketErrors))
	ch <- gauge(c.unserved, float64(s.Unserved))
	ch <- gauge(c.leftOut, float64(s.LeftOut))
	ch <- counter(c.allDown, s.AllDown)
	ch <- counter(c.transitions, s.Up, "up")
	ch <- counter(c.transitions, s.Down, "down")
	ch <- counter(c.fails, s.ServerFailures, TargetBFDFailureServer)
	ch <- counter(c.fails, s.SessionFailures, TargetBFDFailureSession)
	for r := bfd.DiscardReason(1); r < bfd.NumDiscardReasons; r++ {
		ch <- counter(c.discards, s.Discards[r], r.String())
	}
}
