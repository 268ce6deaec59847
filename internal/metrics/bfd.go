package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/bfd"
)

// BFDSource is what BFDCollector reads; *bfd.Server implements it.
type BFDSource interface {
	AllStats() []bfd.Stats
}

// BFDStatsFunc adapts a function to BFDSource.
type BFDStatsFunc func() []bfd.Stats

// AllStats calls f.
func (f BFDStatsFunc) AllStats() []bfd.Stats { return f() }

// bfdDiscardSource is implemented by sources that also count packets no
// session could be found for (*bfd.Server does).
type bfdDiscardSource interface {
	Discards() bfd.DiscardCounts
}

// bfdSessionLabels identify a session: the peer address, the interface of a
// single-hop session ("" otherwise) and whether it is multihop (RFC 5883).
var bfdSessionLabels = []string{"peer", "interface", "multihop"}

func bfdDesc(name, help string, extra ...string) *prometheus.Desc {
	labels := append(append([]string(nil), bfdSessionLabels...), extra...)
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	bfdStateDesc = bfdDesc("sllbrd_bfd_session_state",
		"BFD session state: 1 for the current state, 0 for the others.", "state")
	bfdUpDesc = bfdDesc("sllbrd_bfd_session_up",
		"Whether the BFD session is Up.")
	bfdDiagnosticDesc = bfdDesc("sllbrd_bfd_session_diagnostic_info",
		"Local diagnostic of the BFD session's last state change (why it left Up); always 1.", "diagnostic")
	bfdTransitionsDesc = bfdDesc("sllbrd_bfd_transitions_total",
		"BFD session transitions into (up) and out of (down) state Up.", "direction")
	bfdPacketsDesc = bfdDesc("sllbrd_bfd_control_packets_total",
		"BFD control packets received (in) and sent (out).", "direction")
	bfdDiscardsDesc = bfdDesc("sllbrd_bfd_discarded_packets_total",
		"BFD control packets of the session discarded on reception, by reason.", "reason")
	bfdSendErrorsDesc = bfdDesc("sllbrd_bfd_send_errors_total",
		"Failed sends of BFD control packets.")
	bfdSupersededDesc = bfdDesc("sllbrd_bfd_superseded_packets_total",
		"BFD control packets not sent because a newer one of the session was written first (counted in those sent out).")
	bfdSocketErrorDesc = bfdDesc("sllbrd_bfd_socket_error",
		"Whether the last attempt to open or write the session's socket failed.")
	bfdDetectionDesc = bfdDesc("sllbrd_bfd_detection_time_seconds",
		"Current BFD detection time (0 before the peer has been heard).")
	bfdTxIntervalDesc = bfdDesc("sllbrd_bfd_tx_interval_seconds",
		"Negotiated BFD transmit interval, before jitter.")
	bfdUnmatchedDesc = prometheus.NewDesc("sllbrd_bfd_unmatched_discarded_packets_total",
		"Received BFD packets discarded before a session was found (malformed, or no such session), by reason.",
		[]string{"reason"}, nil)
)

// bfdStates are the states and their state label values, in wire order.
var bfdStates = []struct {
	state bfd.State
	label string
}{
	{bfd.StateAdminDown, "admin_down"}, {bfd.StateDown, "down"},
	{bfd.StateInit, "init"}, {bfd.StateUp, "up"},
}

// BFDCollector exports the BFD sessions of a server.
type BFDCollector struct {
	source BFDSource
}

// NewBFDCollector returns a collector reading s at every scrape. When s also
// has a Discards() bfd.DiscardCounts method (as *bfd.Server does), packets
// discarded before a session was found are exported too.
func NewBFDCollector(s BFDSource) *BFDCollector {
	return &BFDCollector{source: s}
}

// Describe implements prometheus.Collector.
func (c *BFDCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		bfdStateDesc, bfdUpDesc, bfdDiagnosticDesc, bfdTransitionsDesc, bfdPacketsDesc,
		bfdDiscardsDesc, bfdSendErrorsDesc, bfdSupersededDesc, bfdSocketErrorDesc, bfdDetectionDesc,
		bfdTxIntervalDesc, bfdUnmatchedDesc,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *BFDCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.source.AllStats() {
		collectBFDSession(ch, &s)
	}
	if d, ok := c.source.(bfdDiscardSource); ok {
		counts := d.Discards()
		for r := bfd.DiscardReason(1); r < bfd.NumDiscardReasons; r++ {
			ch <- counter(bfdUnmatchedDesc, counts[r], r.String())
		}
	}
}

func collectBFDSession(ch chan<- prometheus.Metric, s *bfd.Stats) {
	l := []string{s.Key.Peer.String(), s.Key.Interface, strconv.FormatBool(s.Key.Multihop)}
	with := func(v string) []string { return append(l[:len(l):len(l)], v) }
	for _, st := range bfdStates {
		ch <- gauge(bfdStateDesc, boolGauge(s.State == st.state), with(st.label)...)
	}
	ch <- gauge(bfdUpDesc, boolGauge(s.State == bfd.StateUp), l...)
	ch <- gauge(bfdDiagnosticDesc, 1, with(snake(s.LocalDiag.String()))...)
	ch <- counter(bfdTransitionsDesc, s.UpTransitions, with("up")...)
	ch <- counter(bfdTransitionsDesc, s.DownTransitions, with("down")...)
	ch <- counter(bfdPacketsDesc, s.PacketsIn, with("in")...)
	ch <- counter(bfdPacketsDesc, s.PacketsOut, with("out")...)
	for r := bfd.DiscardReason(1); r < bfd.NumDiscardReasons; r++ {
		ch <- counter(bfdDiscardsDesc, s.Discards[r], with(r.String())...)
	}
	ch <- counter(bfdSendErrorsDesc, s.SendErrors, l...)
	ch <- counter(bfdSupersededDesc, s.PacketsSuperseded, l...)
	ch <- gauge(bfdSocketErrorDesc, boolGauge(s.SocketError != ""), l...)
	ch <- gauge(bfdDetectionDesc, s.DetectionTime.Seconds(), l...)
	ch <- gauge(bfdTxIntervalDesc, s.TxInterval.Seconds(), l...)
}
