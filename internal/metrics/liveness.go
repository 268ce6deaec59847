package metrics

import (
	"net/netip"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/internal/liveness"
)

// LivenessSource is the SLLBR's endpoint liveness checks (docs/liveness.md),
// read at each scrape; cmd/sllbrd implements it over a liveness.Prober
// (ICMP) and BFD sessions.
type LivenessSource interface {
	// LivenessEndpoints lists every probed endpoint: each Service (with
	// liveness on) and identifier of each address probed.
	LivenessEndpoints() []LivenessEndpoint
	// LivenessCounts returns the counters and the addresses by state.
	LivenessCounts() LivenessCounts
}

// LivenessEndpoint is one probed endpoint address of a Service.
type LivenessEndpoint struct {
	Service string
	ID      int
	Address netip.Addr
	Alive   bool
	Probe   string // how the Service's endpoints are probed: "icmp" or "bfd"
}

// LivenessCounts are the liveness checks' counters since start and the
// addresses probed now.
type LivenessCounts struct {
	Prober liveness.Stats
	BFD    LivenessBFDCounts
	// Alive and Dead count the addresses probed, by state; an address
	// probed both ways counts once, dead when either probe finds it dead.
	Alive, Dead int
	Down, Up    uint64 // transitions of addresses to dead and back to alive, by either probe
	// NeededMoves and NeedlessMoves count the Maglev table entries that
	// liveness transitions moved: from or to the endpoint that changed
	// (needed), or between two endpoints whose liveness did not change
	// (Maglev's needless moves).
	NeededMoves, NeedlessMoves uint64
	// EventsRecorded and EventsLimited count the transitions reported as
	// Events (log lines without an API server) and those the rate limit
	// left out.
	EventsRecorded, EventsLimited uint64
	// ProberFailures counts the probers that stopped on an error and were
	// replaced.
	ProberFailures uint64
}

// LivenessBFDCounts are the BFD probes' own counts.
type LivenessBFDCounts struct {
	// NeverUp and SessionDown count the transitions to dead by cause: no
	// session came Up within the start grace; the session left Up (its
	// detection time expired). PeerStopped counts the sessions the target
	// side took down on purpose (AdminDown), which leave the address's
	// state as it was.
	NeverUp, SessionDown, PeerStopped uint64
	// AddErrors, UpdateErrors and RemoveErrors count the BFD server's
	// refusals (retried; an address without a session is not probed);
	// InvalidConfigs the addresses whose configuration BFD cannot run.
	AddErrors, UpdateErrors, RemoveErrors, InvalidConfigs uint64
	// RouterAddresses is how many endpoint addresses are not BFD-probed
	// now because a gateway router has that address.
	RouterAddresses int
	// SessionUp says, per BFD-probed address, whether its session is Up.
	SessionUp map[netip.Addr]bool
	// SocketErrors is how many of those sessions failed to open or write
	// their socket the last time they tried.
	SocketErrors int
}

var (
	livenessAliveDesc = prometheus.NewDesc("sllbrd_endpoint_alive",
		"Whether this SLLBR finds the endpoint address alive by its own probes (1) or dead (0), probed by ICMP echo or BFD (probe); only probed endpoints.",
		[]string{"service", "id", "address", "probe"}, nil)
	livenessTransitionsDesc = prometheus.NewDesc("sllbrd_endpoint_liveness_transitions_total",
		"Transitions of probed endpoint addresses to dead (down) and back to alive (up).", []string{"direction"}, nil)
	livenessAddressesDesc = prometheus.NewDesc("sllbrd_liveness_probed_addresses",
		"Endpoint addresses probed now, by state (alive, dead); an address of several Services counts once, dead when ICMP or BFD finds it dead.", []string{"state"}, nil)
	livenessSentDesc = prometheus.NewDesc("sllbrd_liveness_probes_sent_total",
		"ICMP and ICMPv6 echo requests the kernel accepted.", nil, nil)
	livenessSendErrorsDesc = prometheus.NewDesc("sllbrd_liveness_send_errors_total",
		"Echo requests the kernel refused (each is a miss for its address).", nil, nil)
	livenessRepliesDesc = prometheus.NewDesc("sllbrd_liveness_replies_total",
		"Messages received on the probe sockets: valid echo replies, and those ignored by the first check they failed.", []string{"result"}, nil)
	livenessReceiveErrorsDesc = prometheus.NewDesc("sllbrd_liveness_receive_errors_total",
		"Failed reads of the probe sockets.", nil, nil)
	livenessReceiveDropsDesc = prometheus.NewDesc("sllbrd_liveness_receive_drops_total",
		"Datagrams the kernel dropped on the probe sockets (receive buffer full, bad ICMPv6 checksum).", nil, nil)
	livenessMovesDesc = prometheus.NewDesc("sllbrd_liveness_moved_entries_total",
		"Maglev table entries moved by liveness transitions: from or to the endpoint that changed (needed), or between endpoints whose liveness did not change (needless).",
		[]string{"kind"}, nil)
	livenessFailuresDesc = prometheus.NewDesc("sllbrd_liveness_prober_failures_total",
		"Times the liveness prober stopped on an error and a new one took over (every address alive again until found dead).", nil, nil)
	livenessEventsDesc = prometheus.NewDesc("sllbrd_liveness_events_total",
		"Liveness transitions reported as Events (log lines without an API server): recorded, or left out by the rate limit (rate_limited).",
		[]string{"result"}, nil)
	livenessBFDDeadDesc = prometheus.NewDesc("sllbrd_liveness_bfd_dead_total",
		"BFD-probed endpoint addresses found dead, by cause: no session came up with the target side (never_up), the session went down (session_down).",
		[]string{"cause"}, nil)
	livenessBFDStoppedDesc = prometheus.NewDesc("sllbrd_liveness_bfd_peer_stopped_total",
		"BFD sessions of endpoint addresses that the target side took down on purpose (AdminDown: restarting, upgraded, or its BFD timing removed); the address keeps its state until its session is up again.",
		nil, nil)
	livenessBFDErrorsDesc = prometheus.NewDesc("sllbrd_liveness_bfd_session_errors_total",
		"BFD sessions of endpoint addresses the BFD server refused to add, update or remove (retried every second), or that BFD cannot run (invalid).",
		[]string{"operation"}, nil)
	livenessBFDSessionUpDesc = prometheus.NewDesc("sllbrd_liveness_bfd_session_up",
		"Whether the BFD session with a BFD-probed endpoint address is Up (the sllbrd_bfd_* series are the gateway routers' sessions only).",
		[]string{"address"}, nil)
	livenessBFDSocketErrorsDesc = prometheus.NewDesc("sllbrd_liveness_bfd_socket_errors",
		"BFD sessions of endpoint addresses whose last attempt to open or write their socket failed (a session without a socket never comes up: see RLIMIT_NOFILE).",
		nil, nil)
	livenessBFDRoutersDesc = prometheus.NewDesc("sllbrd_liveness_bfd_router_addresses",
		"Endpoint addresses of Services probed by BFD that are not BFD-probed because a gateway router has the address.", nil, nil)
)

// LivenessCollector exports the endpoint liveness checks.
type LivenessCollector struct {
	source LivenessSource
}

// NewLivenessCollector returns a collector reading s at every scrape.
func NewLivenessCollector(s LivenessSource) *LivenessCollector {
	return &LivenessCollector{source: s}
}

// Describe implements prometheus.Collector.
func (c *LivenessCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		livenessAliveDesc, livenessTransitionsDesc, livenessAddressesDesc, livenessSentDesc,
		livenessSendErrorsDesc, livenessRepliesDesc, livenessReceiveErrorsDesc, livenessReceiveDropsDesc,
		livenessMovesDesc, livenessEventsDesc, livenessFailuresDesc, livenessBFDDeadDesc, livenessBFDStoppedDesc, livenessBFDErrorsDesc,
		livenessBFDRoutersDesc, livenessBFDSessionUpDesc, livenessBFDSocketErrorsDesc,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *LivenessCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.source.LivenessEndpoints() {
		ch <- gauge(livenessAliveDesc, boolGauge(e.Alive), e.Service, strconv.Itoa(e.ID), e.Address.String(), e.Probe)
	}
	n := c.source.LivenessCounts()
	ch <- counter(livenessTransitionsDesc, n.Down, "down")
	ch <- counter(livenessTransitionsDesc, n.Up, "up")
	ch <- gauge(livenessAddressesDesc, float64(n.Alive), "alive")
	ch <- gauge(livenessAddressesDesc, float64(n.Dead), "dead")
	p := n.Prober
	ch <- counter(livenessSentDesc, p.ProbesSent)
	ch <- counter(livenessSendErrorsDesc, p.SendErrors)
	for _, r := range []struct {
		label string
		v     uint64
	}{
		{"valid", p.RepliesValid}, {"malformed", p.Ignored.Malformed}, {"foreign_id", p.Ignored.ForeignID},
		{"wrong_source", p.Ignored.WrongSource}, {"unknown_sequence", p.Ignored.UnknownSequence},
		{"payload_mismatch", p.Ignored.PayloadMismatch},
	} {
		ch <- counter(livenessRepliesDesc, r.v, r.label)
	}
	ch <- counter(livenessReceiveErrorsDesc, p.ReceiveErrors)
	ch <- counter(livenessReceiveDropsDesc, p.ReceiveDrops)
	ch <- counter(livenessMovesDesc, n.NeededMoves, "needed")
	ch <- counter(livenessMovesDesc, n.NeedlessMoves, "needless")
	ch <- counter(livenessEventsDesc, n.EventsRecorded, "recorded")
	ch <- counter(livenessEventsDesc, n.EventsLimited, "rate_limited")
	ch <- counter(livenessFailuresDesc, n.ProberFailures)
	b := n.BFD
	for _, c := range []struct {
		desc  *prometheus.Desc
		label string
		v     uint64
	}{
		{livenessBFDDeadDesc, "never_up", b.NeverUp}, {livenessBFDDeadDesc, "session_down", b.SessionDown},
		{livenessBFDErrorsDesc, "add", b.AddErrors}, {livenessBFDErrorsDesc, "update", b.UpdateErrors},
		{livenessBFDErrorsDesc, "remove", b.RemoveErrors}, {livenessBFDErrorsDesc, "invalid", b.InvalidConfigs},
	} {
		ch <- counter(c.desc, c.v, c.label)
	}
	ch <- counter(livenessBFDStoppedDesc, b.PeerStopped)
	ch <- gauge(livenessBFDRoutersDesc, float64(b.RouterAddresses))
	ch <- gauge(livenessBFDSocketErrorsDesc, float64(b.SocketErrors))
	for a, up := range b.SessionUp {
		ch <- gauge(livenessBFDSessionUpDesc, boolGauge(up), a.String())
	}
}
