package metrics

import (
	"net/netip"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BGPPeer is the state of one BGP session, filled by the caller (the bgp
// package is not imported here).
type BGPPeer struct {
	Peer   netip.Addr // the neighbor's address
	Router string     // the configured router (gateway) the peer belongs to
	// State is the session's FSM state, one of BGPStates; another value is
	// exported as its own state series.
	State       string
	Established bool
	// Uptime is how long the session has been established (0 when it is not).
	Uptime time.Duration
	// Prefixes announced to the peer, received from it, and accepted by
	// import policy.
	PrefixesAnnounced, PrefixesReceived, PrefixesAccepted uint64
	// Flaps counts how often the session left Established.
	Flaps uint64
}

// The BGP finite state machine states (RFC 4271 section 8.2.2), as the
// values of the state label.
const (
	BGPStateIdle        = "idle"
	BGPStateConnect     = "connect"
	BGPStateActive      = "active"
	BGPStateOpenSent    = "opensent"
	BGPStateOpenConfirm = "openconfirm"
	BGPStateEstablished = "established"
)

// BGPStates lists the BGP states in FSM order.
var BGPStates = []string{
	BGPStateIdle, BGPStateConnect, BGPStateActive,
	BGPStateOpenSent, BGPStateOpenConfirm, BGPStateEstablished,
}

var bgpPeerLabels = []string{"peer", "router"}

func bgpDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string(nil), bgpPeerLabels...), extra...), nil)
}

var (
	bgpStateDesc = bgpDesc("sllbrd_bgp_session_state",
		"BGP session FSM state: 1 for the current state, 0 for the others.", "state")
	bgpUpDesc = bgpDesc("sllbrd_bgp_session_up",
		"Whether the BGP session is Established.")
	bgpUptimeDesc = bgpDesc("sllbrd_bgp_session_uptime_seconds",
		"How long the BGP session has been Established (0 when it is not).")
	bgpAnnouncedDesc = bgpDesc("sllbrd_bgp_prefixes_announced",
		"Prefixes announced to the BGP peer.")
	bgpReceivedDesc = bgpDesc("sllbrd_bgp_prefixes_received",
		"Prefixes received from the BGP peer.")
	bgpAcceptedDesc = bgpDesc("sllbrd_bgp_prefixes_accepted",
		"Prefixes received from the BGP peer and accepted by import policy.")
	bgpFlapsDesc = bgpDesc("sllbrd_bgp_session_flaps_total",
		"Times the BGP session left Established.")
)

// BGPCollector exports BGP sessions from a function the caller provides.
type BGPCollector struct {
	peers func() []BGPPeer
}

// NewBGPCollector returns a collector calling peers at every scrape.
func NewBGPCollector(peers func() []BGPPeer) *BGPCollector {
	return &BGPCollector{peers: peers}
}

// Describe implements prometheus.Collector.
func (c *BGPCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		bgpStateDesc, bgpUpDesc, bgpUptimeDesc, bgpAnnouncedDesc,
		bgpReceivedDesc, bgpAcceptedDesc, bgpFlapsDesc,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *BGPCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.peers() {
		collectBGPPeer(ch, &p)
	}
}

func collectBGPPeer(ch chan<- prometheus.Metric, p *BGPPeer) {
	l := []string{p.Peer.String(), p.Router}
	with := func(v string) []string { return append(l[:len(l):len(l)], v) }
	for _, st := range BGPStates {
		ch <- gauge(bgpStateDesc, boolGauge(p.State == st), with(st)...)
	}
	if !slices.Contains(BGPStates, p.State) {
		ch <- gauge(bgpStateDesc, 1, with(p.State)...)
	}
	ch <- gauge(bgpUpDesc, boolGauge(p.Established), l...)
	ch <- gauge(bgpUptimeDesc, p.Uptime.Seconds(), l...)
	ch <- gauge(bgpAnnouncedDesc, float64(p.PrefixesAnnounced), l...)
	ch <- gauge(bgpReceivedDesc, float64(p.PrefixesReceived), l...)
	ch <- gauge(bgpAcceptedDesc, float64(p.PrefixesAccepted), l...)
	ch <- counter(bgpFlapsDesc, p.Flaps, l...)
}
