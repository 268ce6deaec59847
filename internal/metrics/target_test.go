package metrics

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sllbrd/sllbrd/internal/targetnet"
)

func TestTargetMetrics(t *testing.T) {
	m := NewTarget()
	res := targetnet.Result{Conflicts: []string{"c"}, Gateways: []targetnet.GatewayResult{{Name: "sllb-a",
		VIPs:     []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32"), netip.MustParsePrefix("2001:db8::1/128")},
		NextHops: []netip.Addr{netip.MustParseAddr("169.111.100.1"), netip.MustParseAddr("169.111.100.2"), netip.MustParseAddr("fd00:111::1")},
		Kept:     []targetnet.Family{targetnet.IPv6}}}}
	m.ObserveApply(targetnet.Outcome{Generation: 4, Result: res, Took: time.Millisecond})
	m.ObserveApply(targetnet.Outcome{Generation: 5, Result: res, Err: errors.New("boom")})
	m.ObserveStatusWrite(nil)
	want := `# HELP sllbrd_target_applied_generation Generation of the desired network configuration last applied without error.
# TYPE sllbrd_target_applied_generation gauge
sllbrd_target_applied_generation 4
# HELP sllbrd_target_apply_errors_total Applies that failed (retried with backoff).
# TYPE sllbrd_target_apply_errors_total counter
sllbrd_target_apply_errors_total 1
# HELP sllbrd_target_applies_total Applies of the desired network configuration, by result (success, error).
# TYPE sllbrd_target_applies_total counter
sllbrd_target_applies_total{result="error"} 1
sllbrd_target_applies_total{result="success"} 1
# HELP sllbrd_target_conflicts Foreign network configuration in the way of the desired one at the last apply (left as it is).
# TYPE sllbrd_target_conflicts gauge
sllbrd_target_conflicts 1
# HELP sllbrd_target_next_hops Next hops (SLLBR pods) of a Gateway's VIP-sourced traffic in place in the pod, by family.
# TYPE sllbrd_target_next_hops gauge
sllbrd_target_next_hops{family="ipv4",gateway="sllb-a"} 2
sllbrd_target_next_hops{family="ipv6",gateway="sllb-a"} 1
# HELP sllbrd_target_next_hops_kept 1 while a Gateway has no ready SLLBR pod of a family and its last next hops are kept.
# TYPE sllbrd_target_next_hops_kept gauge
sllbrd_target_next_hops_kept{family="ipv4",gateway="sllb-a"} 0
sllbrd_target_next_hops_kept{family="ipv6",gateway="sllb-a"} 1
# HELP sllbrd_target_status_writes_total Writes of the status annotation, by result (success, error).
# TYPE sllbrd_target_status_writes_total counter
sllbrd_target_status_writes_total{result="success"} 1
# HELP sllbrd_target_vips VIPs of a Gateway in place in the pod (local address and rule).
# TYPE sllbrd_target_vips gauge
sllbrd_target_vips{gateway="sllb-a"} 2
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "sllbrd_target_applied_generation", "sllbrd_target_apply_errors_total",
		"sllbrd_target_applies_total", "sllbrd_target_conflicts", "sllbrd_target_next_hops", "sllbrd_target_next_hops_kept",
		"sllbrd_target_status_writes_total", "sllbrd_target_vips"); err != nil {
		t.Fatal(err)
	}
	// A Gateway gone: its series go.
	m.ObserveApply(targetnet.Outcome{Generation: 6})
	if n := testutil.CollectAndCount(m, "sllbrd_target_vips", "sllbrd_target_next_hops"); n != 0 {
		t.Errorf("%d series of a gone Gateway", n)
	}
}
