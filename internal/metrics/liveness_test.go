package metrics

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sllbrd/sllbrd/internal/liveness"
)

// fakeLiveness is a LivenessSource with fixed answers.
type fakeLiveness struct {
	endpoints []LivenessEndpoint
	counts    LivenessCounts
}

func (f fakeLiveness) LivenessEndpoints() []LivenessEndpoint { return f.endpoints }
func (f fakeLiveness) LivenessCounts() LivenessCounts        { return f.counts }

func livenessSample() fakeLiveness {
	return fakeLiveness{
		endpoints: []LivenessEndpoint{
			{Service: "service-a", ID: 0, Address: netip.MustParseAddr("169.111.100.11"), Alive: true, Probe: "icmp"},
			{Service: "service-a", ID: 1, Address: netip.MustParseAddr("fd00:111::12"), Alive: false, Probe: "icmp"},
			{Service: "service-b", ID: 0, Address: netip.MustParseAddr("fd00:111::12"), Alive: false, Probe: "bfd"},
		},
		counts: LivenessCounts{
			Prober: liveness.Stats{ProbesSent: 100, SendErrors: 2, RepliesValid: 90, ReceiveErrors: 1, ReceiveDrops: 3,
				Ignored: liveness.Ignored{Malformed: 4, ForeignID: 5, WrongSource: 6, UnknownSequence: 7, PayloadMismatch: 8}},
			Alive: 1, Dead: 1, Down: 3, Up: 2, NeededMoves: 5461, NeedlessMoves: 12, EventsRecorded: 4, EventsLimited: 1, ProberFailures: 1,
			BFD: LivenessBFDCounts{NeverUp: 1, SessionDown: 2, PeerStopped: 3, AddErrors: 4, UpdateErrors: 5, RemoveErrors: 6,
				InvalidConfigs: 7, RouterAddresses: 8, SocketErrors: 9,
				SessionUp: map[netip.Addr]bool{netip.MustParseAddr("169.111.100.12"): true, netip.MustParseAddr("fd00:111::12"): false}},
		},
	}
}

// TestLivenessMetrics: every value comes from the source, with its labels.
func TestLivenessMetrics(t *testing.T) {
	c := NewLivenessCollector(livenessSample())
	want := `
# HELP sllbrd_endpoint_alive Whether this SLLBR finds the endpoint address alive by its own probes (1) or dead (0), probed by ICMP echo or BFD (probe); only probed endpoints.
# TYPE sllbrd_endpoint_alive gauge
sllbrd_endpoint_alive{address="169.111.100.11",id="0",probe="icmp",service="service-a"} 1
sllbrd_endpoint_alive{address="fd00:111::12",id="0",probe="bfd",service="service-b"} 0
sllbrd_endpoint_alive{address="fd00:111::12",id="1",probe="icmp",service="service-a"} 0
# HELP sllbrd_endpoint_liveness_transitions_total Transitions of probed endpoint addresses to dead (down) and back to alive (up).
# TYPE sllbrd_endpoint_liveness_transitions_total counter
sllbrd_endpoint_liveness_transitions_total{direction="down"} 3
sllbrd_endpoint_liveness_transitions_total{direction="up"} 2
# HELP sllbrd_liveness_moved_entries_total Maglev table entries moved by liveness transitions: from or to the endpoint that changed (needed), or between endpoints whose liveness did not change (needless).
# TYPE sllbrd_liveness_moved_entries_total counter
sllbrd_liveness_moved_entries_total{kind="needed"} 5461
sllbrd_liveness_moved_entries_total{kind="needless"} 12
# HELP sllbrd_liveness_probed_addresses Endpoint addresses probed now, by state (alive, dead); an address of several Services counts once, dead when ICMP or BFD finds it dead.
# TYPE sllbrd_liveness_probed_addresses gauge
sllbrd_liveness_probed_addresses{state="alive"} 1
sllbrd_liveness_probed_addresses{state="dead"} 1
# HELP sllbrd_liveness_replies_total Messages received on the probe sockets: valid echo replies, and those ignored by the first check they failed.
# TYPE sllbrd_liveness_replies_total counter
sllbrd_liveness_replies_total{result="foreign_id"} 5
sllbrd_liveness_replies_total{result="malformed"} 4
sllbrd_liveness_replies_total{result="payload_mismatch"} 8
sllbrd_liveness_replies_total{result="unknown_sequence"} 7
sllbrd_liveness_replies_total{result="valid"} 90
sllbrd_liveness_replies_total{result="wrong_source"} 6
`
	names := []string{"sllbrd_endpoint_alive", "sllbrd_endpoint_liveness_transitions_total", "sllbrd_liveness_moved_entries_total",
		"sllbrd_liveness_probed_addresses", "sllbrd_liveness_replies_total"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	scalars := `
# HELP sllbrd_liveness_prober_failures_total Times the liveness prober stopped on an error and a new one took over (every address alive again until found dead).
# TYPE sllbrd_liveness_prober_failures_total counter
sllbrd_liveness_prober_failures_total 1
# HELP sllbrd_liveness_probes_sent_total ICMP and ICMPv6 echo requests the kernel accepted.
# TYPE sllbrd_liveness_probes_sent_total counter
sllbrd_liveness_probes_sent_total 100
# HELP sllbrd_liveness_receive_drops_total Datagrams the kernel dropped on the probe sockets (receive buffer full, bad ICMPv6 checksum).
# TYPE sllbrd_liveness_receive_drops_total counter
sllbrd_liveness_receive_drops_total 3
# HELP sllbrd_liveness_receive_errors_total Failed reads of the probe sockets.
# TYPE sllbrd_liveness_receive_errors_total counter
sllbrd_liveness_receive_errors_total 1
# HELP sllbrd_liveness_send_errors_total Echo requests the kernel refused (each is a miss for its address).
# TYPE sllbrd_liveness_send_errors_total counter
sllbrd_liveness_send_errors_total 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(scalars), "sllbrd_liveness_prober_failures_total", "sllbrd_liveness_probes_sent_total",
		"sllbrd_liveness_receive_drops_total", "sllbrd_liveness_receive_errors_total", "sllbrd_liveness_send_errors_total"); err != nil {
		t.Fatal(err)
	}
	events := `
# HELP sllbrd_liveness_events_total Liveness transitions reported as Events (log lines without an API server): recorded, or left out by the rate limit (rate_limited).
# TYPE sllbrd_liveness_events_total counter
sllbrd_liveness_events_total{result="rate_limited"} 1
sllbrd_liveness_events_total{result="recorded"} 4
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(events), "sllbrd_liveness_events_total"); err != nil {
		t.Fatal(err)
	}
	bfdCounts := `
# HELP sllbrd_liveness_bfd_dead_total BFD-probed endpoint addresses found dead, by cause: no session came up with the target side (never_up), the session went down (session_down).
# TYPE sllbrd_liveness_bfd_dead_total counter
sllbrd_liveness_bfd_dead_total{cause="never_up"} 1
sllbrd_liveness_bfd_dead_total{cause="session_down"} 2
# HELP sllbrd_liveness_bfd_peer_stopped_total BFD sessions of endpoint addresses that the target side took down on purpose (AdminDown: restarting, upgraded, or its BFD timing removed); the address keeps its state until its session is up again.
# TYPE sllbrd_liveness_bfd_peer_stopped_total counter
sllbrd_liveness_bfd_peer_stopped_total 3
# HELP sllbrd_liveness_bfd_router_addresses Endpoint addresses of Services probed by BFD that are not BFD-probed because a gateway router has the address.
# TYPE sllbrd_liveness_bfd_router_addresses gauge
sllbrd_liveness_bfd_router_addresses 8
# HELP sllbrd_liveness_bfd_session_errors_total BFD sessions of endpoint addresses the BFD server refused to add, update or remove (retried every second), or that BFD cannot run (invalid).
# TYPE sllbrd_liveness_bfd_session_errors_total counter
sllbrd_liveness_bfd_session_errors_total{operation="add"} 4
sllbrd_liveness_bfd_session_errors_total{operation="invalid"} 7
sllbrd_liveness_bfd_session_errors_total{operation="remove"} 6
sllbrd_liveness_bfd_session_errors_total{operation="update"} 5
# HELP sllbrd_liveness_bfd_session_up Whether the BFD session with a BFD-probed endpoint address is Up (the sllbrd_bfd_* series are the gateway routers' sessions only).
# TYPE sllbrd_liveness_bfd_session_up gauge
sllbrd_liveness_bfd_session_up{address="169.111.100.12"} 1
sllbrd_liveness_bfd_session_up{address="fd00:111::12"} 0
# HELP sllbrd_liveness_bfd_socket_errors BFD sessions of endpoint addresses whose last attempt to open or write their socket failed (a session without a socket never comes up: see RLIMIT_NOFILE).
# TYPE sllbrd_liveness_bfd_socket_errors gauge
sllbrd_liveness_bfd_socket_errors 9
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(bfdCounts), "sllbrd_liveness_bfd_dead_total",
		"sllbrd_liveness_bfd_peer_stopped_total", "sllbrd_liveness_bfd_router_addresses",
		"sllbrd_liveness_bfd_session_errors_total", "sllbrd_liveness_bfd_session_up", "sllbrd_liveness_bfd_socket_errors"); err != nil {
		t.Fatal(err)
	}
}
