package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/targetbfd"
)

// TestTargetBFDMetrics: the target side's BFD is read at each scrape: the
// sessions in every state, the counts, the discards by reason.
func TestTargetBFDMetrics(t *testing.T) {
	s := targetbfd.Stats{Sessions: map[bfd.State]int{bfd.StateUp: 3, bfd.StateDown: 1}, SocketErrors: 1, Unserved: 2,
		ServerFailures: 4, SessionFailures: 5, Up: 6, Down: 7, LeftOut: 9, AllDown: 10}
	s.Discards[bfd.DiscardNoSession] = 8
	c := NewTargetBFD(func() targetbfd.Stats { return s })
	want := `# HELP sllbrd_target_bfd_all_next_hops_down_total Times every next hop of a family of a Gateway had its BFD session down, so that all were kept in the routes (never none).
# TYPE sllbrd_target_bfd_all_next_hops_down_total counter
sllbrd_target_bfd_all_next_hops_down_total 10
# HELP sllbrd_target_bfd_failures_total Failures of the target side's BFD: a server that could not start in its network namespace or stopped (server; started again), a session the server refused to add, update or remove (session; tried again).
# TYPE sllbrd_target_bfd_failures_total counter
sllbrd_target_bfd_failures_total{what="server"} 4
sllbrd_target_bfd_failures_total{what="session"} 5
# HELP sllbrd_target_bfd_next_hops_down Next hops left out of their Gateway's routes because their BFD session is down (back as soon as it is up).
# TYPE sllbrd_target_bfd_next_hops_down gauge
sllbrd_target_bfd_next_hops_down 9
# HELP sllbrd_target_bfd_next_hops_without_session Next hops of Gateways with liveness that have no BFD session: no interface of their family is known.
# TYPE sllbrd_target_bfd_next_hops_without_session gauge
sllbrd_target_bfd_next_hops_without_session 2
# HELP sllbrd_target_bfd_sessions BFD sessions of the target side with the SLLBR pods (one per next hop of a Gateway with liveness), by state.
# TYPE sllbrd_target_bfd_sessions gauge
sllbrd_target_bfd_sessions{state="admin_down"} 0
sllbrd_target_bfd_sessions{state="down"} 1
sllbrd_target_bfd_sessions{state="init"} 0
sllbrd_target_bfd_sessions{state="up"} 3
# HELP sllbrd_target_bfd_socket_errors BFD sessions of the target side whose last attempt to open or write their socket failed (tried again every second).
# TYPE sllbrd_target_bfd_socket_errors gauge
sllbrd_target_bfd_socket_errors 1
# HELP sllbrd_target_bfd_transitions_total BFD session transitions of the target side into (up) and out of (down) state Up.
# TYPE sllbrd_target_bfd_transitions_total counter
sllbrd_target_bfd_transitions_total{direction="down"} 7
sllbrd_target_bfd_transitions_total{direction="up"} 6
`
	names := []string{"sllbrd_target_bfd_all_next_hops_down_total", "sllbrd_target_bfd_failures_total", "sllbrd_target_bfd_next_hops_down",
		"sllbrd_target_bfd_next_hops_without_session", "sllbrd_target_bfd_sessions",
		"sllbrd_target_bfd_socket_errors", "sllbrd_target_bfd_transitions_total"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "sllbrd_target_bfd_discarded_packets_total"); n != int(bfd.NumDiscardReasons)-1 {
		t.Errorf("%d discard series, want one per reason", n)
	}
	s.Sessions[bfd.StateUp] = 0 // read at scrape time
	if err := testutil.CollectAndCompare(c, strings.NewReader(strings.Replace(want, `{state="up"} 3`, `{state="up"} 0`, 1)), names...); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	found := false
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "sllbrd_target_bfd_discarded_packets_total" && m.GetLabel()[0].GetValue() == "no_session" {
				found = m.GetCounter().GetValue() == 8
			}
		}
	}
	if !found {
		t.Error("no sllbrd_target_bfd_discarded_packets_total{reason=\"no_session\"} 8")
	}
}
