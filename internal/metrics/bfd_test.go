package metrics

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sllbrd/sllbrd/bfd"
)

// bfdWithDiscards is a source that also reports unmatched discards, like
// *bfd.Server.
type bfdWithDiscards struct {
	BFDStatsFunc
	discards bfd.DiscardCounts
}

func (s bfdWithDiscards) Discards() bfd.DiscardCounts { return s.discards }

func upSession() bfd.Stats {
	var discards bfd.DiscardCounts
	discards[bfd.DiscardBadTTL] = 2
	return bfd.Stats{
		Key: bfd.Key{Peer: netip.MustParseAddr("fe80::1"), Interface: "eth1"},
		SessionStats: bfd.SessionStats{
			State: bfd.StateUp, LocalDiag: bfd.DiagNone,
			TxInterval: 300 * time.Millisecond, DetectionTime: 900 * time.Millisecond,
			PacketsIn: 40, PacketsOut: 41, UpTransitions: 2, DownTransitions: 1, Discards: discards,
		},
		PacketsSuperseded: 3,
	}
}

func downSession() bfd.Stats {
	return bfd.Stats{
		Key: bfd.Key{Peer: netip.MustParseAddr("192.0.2.1"), Multihop: true},
		SessionStats: bfd.SessionStats{
			State: bfd.StateDown, LocalDiag: bfd.DiagControlDetectExpired,
			TxInterval: time.Second, PacketsOut: 5, DownTransitions: 1,
		},
		SendErrors: 3, SocketError: "network unreachable",
	}
}

// bfdSessionExposition is the expected exposition of one session; labels is
// its peer, interface and multihop label pairs.
func bfdSessionExposition(labels string, st bfd.Stats) string {
	var b strings.Builder
	with := func(extra string) string { // labels in name order, as the exposition has them
		if extra < "interface" {
			return "{" + extra + "," + labels + "}"
		}
		return "{" + labels + "," + extra + "}"
	}
	up := map[bool]int{true: 1, false: 0}
	for _, s := range []struct {
		label string
		state bfd.State
	}{{"admin_down", bfd.StateAdminDown}, {"down", bfd.StateDown}, {"init", bfd.StateInit}, {"up", bfd.StateUp}} {
		fmt.Fprintf(&b, "sllbrd_bfd_session_state%s %d\n", with(`state="`+s.label+`"`), up[st.State == s.state])
	}
	fmt.Fprintf(&b, "sllbrd_bfd_session_up{%s} %d\n", labels, up[st.State == bfd.StateUp])
	fmt.Fprintf(&b, "sllbrd_bfd_transitions_total%s %d\n", with(`direction="up"`), st.UpTransitions)
	fmt.Fprintf(&b, "sllbrd_bfd_transitions_total%s %d\n", with(`direction="down"`), st.DownTransitions)
	fmt.Fprintf(&b, "sllbrd_bfd_control_packets_total%s %d\n", with(`direction="in"`), st.PacketsIn)
	fmt.Fprintf(&b, "sllbrd_bfd_control_packets_total%s %d\n", with(`direction="out"`), st.PacketsOut)
	for r := bfd.DiscardReason(1); r < bfd.NumDiscardReasons; r++ {
		fmt.Fprintf(&b, "sllbrd_bfd_discarded_packets_total%s %d\n", with(`reason="`+r.String()+`"`), st.Discards[r])
	}
	fmt.Fprintf(&b, "sllbrd_bfd_send_errors_total{%s} %d\n", labels, st.SendErrors)
	fmt.Fprintf(&b, "sllbrd_bfd_superseded_packets_total{%s} %d\n", labels, st.PacketsSuperseded)
	fmt.Fprintf(&b, "sllbrd_bfd_socket_error{%s} %d\n", labels, up[st.SocketError != ""])
	fmt.Fprintf(&b, "sllbrd_bfd_detection_time_seconds{%s} %g\n", labels, st.DetectionTime.Seconds())
	fmt.Fprintf(&b, "sllbrd_bfd_tx_interval_seconds{%s} %g\n", labels, st.TxInterval.Seconds())
	return b.String()
}

func TestBFDCollector(t *testing.T) {
	up, down := upSession(), downSession()
	upLabels := `interface="eth1",multihop="false",peer="fe80::1"`
	downLabels := `interface="",multihop="true",peer="192.0.2.1"`
	var unmatched bfd.DiscardCounts
	unmatched[bfd.DiscardNoSession] = 9
	for _, tc := range []struct {
		name   string
		source BFDSource
		want   string
	}{
		{"no sessions", BFDStatsFunc(func() []bfd.Stats { return nil }), ""},
		{"up and down sessions", BFDStatsFunc(func() []bfd.Stats { return []bfd.Stats{up, down} }),
			bfdSessionExposition(upLabels, up) + bfdSessionExposition(downLabels, down) +
				`sllbrd_bfd_session_diagnostic_info{diagnostic="no_diagnostic",` + upLabels + "} 1\n" +
				`sllbrd_bfd_session_diagnostic_info{diagnostic="control_detection_time_expired",` + downLabels + "} 1\n"},
		{"unmatched discards", bfdWithDiscards{BFDStatsFunc(func() []bfd.Stats { return nil }), unmatched},
			unmatchedExposition(unmatched)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := testutil.CollectAndCompare(NewBFDCollector(tc.source), strings.NewReader(withBFDHeaders(tc.want)))
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func unmatchedExposition(c bfd.DiscardCounts) string {
	var b strings.Builder
	for r := bfd.DiscardReason(1); r < bfd.NumDiscardReasons; r++ {
		fmt.Fprintf(&b, "sllbrd_bfd_unmatched_discarded_packets_total{reason=%q} %d\n", r.String(), c[r])
	}
	return b.String()
}

// withBFDHeaders prepends the HELP and TYPE lines of every BFD metric that
// appears in body.
func withBFDHeaders(body string) string {
	var b strings.Builder
	for _, h := range []struct{ name, typ, help string }{
		{"sllbrd_bfd_session_state", "gauge", "BFD session state: 1 for the current state, 0 for the others."},
		{"sllbrd_bfd_session_up", "gauge", "Whether the BFD session is Up."},
		{"sllbrd_bfd_session_diagnostic_info", "gauge", "Local diagnostic of the BFD session's last state change (why it left Up); always 1."},
		{"sllbrd_bfd_transitions_total", "counter", "BFD session transitions into (up) and out of (down) state Up."},
		{"sllbrd_bfd_control_packets_total", "counter", "BFD control packets received (in) and sent (out)."},
		{"sllbrd_bfd_discarded_packets_total", "counter", "BFD control packets of the session discarded on reception, by reason."},
		{"sllbrd_bfd_send_errors_total", "counter", "Failed sends of BFD control packets."},
		{"sllbrd_bfd_superseded_packets_total", "counter", "BFD control packets not sent because a newer one of the session was written first (counted in those sent out)."},
		{"sllbrd_bfd_socket_error", "gauge", "Whether the last attempt to open or write the session's socket failed."},
		{"sllbrd_bfd_detection_time_seconds", "gauge", "Current BFD detection time (0 before the peer has been heard)."},
		{"sllbrd_bfd_tx_interval_seconds", "gauge", "Negotiated BFD transmit interval, before jitter."},
		{"sllbrd_bfd_unmatched_discarded_packets_total", "counter", "Received BFD packets discarded before a session was found (malformed, or no such session), by reason."},
	} {
		if strings.Contains(body, h.name+"{") {
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", h.name, h.help, h.name, h.typ)
		}
	}
	return b.String() + body
}

func TestBFDCollectorReadsRealServer(t *testing.T) {
	srv := bfd.NewServer()
	if err := srv.Add(bfd.SessionConfig{Peer: netip.MustParseAddr("192.0.2.9"), Interface: "eth0"}); err != nil {
		t.Fatal(err)
	}
	labels := `interface="eth0",multihop="false",peer="192.0.2.9"`
	want := withBFDHeaders(`sllbrd_bfd_session_state{` + labels + `,state="admin_down"} 0
sllbrd_bfd_session_state{` + labels + `,state="down"} 1
sllbrd_bfd_session_state{` + labels + `,state="init"} 0
sllbrd_bfd_session_state{` + labels + `,state="up"} 0
sllbrd_bfd_session_up{` + labels + `} 0
`)
	c := NewBFDCollector(srv)
	err := testutil.CollectAndCompare(c, strings.NewReader(want), "sllbrd_bfd_session_state", "sllbrd_bfd_session_up")
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "sllbrd_bfd_unmatched_discarded_packets_total"); n != int(bfd.NumDiscardReasons)-1 {
		t.Fatalf("%d unmatched discard series, want one per reason", n)
	}
}
