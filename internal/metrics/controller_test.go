package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestControllerMetrics(t *testing.T) {
	c := NewController()
	c.SetLeader(true)
	c.ObserveReconcile("Service", ResultSuccess, 2*time.Millisecond)
	c.ObserveReconcile("Service", ResultConflict, time.Millisecond)
	c.SetService("service-a", 3, 2, map[string]int{"NoNetworkStatus": 1, "InvalidNetworkStatus": 0})
	c.SetServiceHeld("service-a", 2)
	c.SetService("service-b", 1, 0, nil)
	c.SetServiceHeld("service-b", 1)
	c.ForgetService("service-b")
	want := `# HELP sllbrd_controller_leader Whether this controller replica holds the leader Lease and writes (1) or stands by (0).
# TYPE sllbrd_controller_leader gauge
sllbrd_controller_leader 1
# HELP sllbrd_controller_reconciles_total Reconciles of one object, by kind and result (success, conflict, stale, error).
# TYPE sllbrd_controller_reconciles_total counter
sllbrd_controller_reconciles_total{kind="Service",result="conflict"} 1
sllbrd_controller_reconciles_total{kind="Service",result="success"} 1
# HELP sllbrd_controller_service_endpoints Pods of a Service that have an endpoint identifier.
# TYPE sllbrd_controller_service_endpoints gauge
sllbrd_controller_service_endpoints{service="service-a"} 3
# HELP sllbrd_controller_service_endpoints_held Endpoints of a Service kept ready by the readiness hold: their pod is not ready, with no container restarted, for less than its probe time (as after a kubelet restart).
# TYPE sllbrd_controller_service_endpoints_held gauge
sllbrd_controller_service_endpoints_held{service="service-a"} 2
# HELP sllbrd_controller_service_pods_over_limit Pods of a Service left out because all its identifiers (max-endpoints) are in use.
# TYPE sllbrd_controller_service_pods_over_limit gauge
sllbrd_controller_service_pods_over_limit{service="service-a"} 2
# HELP sllbrd_controller_service_pods_skipped Pods a Service selects that are not endpoints, by reason (no or invalid network-status, no address on the Gateway's networks).
# TYPE sllbrd_controller_service_pods_skipped gauge
sllbrd_controller_service_pods_skipped{reason="InvalidNetworkStatus",service="service-a"} 0
sllbrd_controller_service_pods_skipped{reason="NoNetworkStatus",service="service-a"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "sllbrd_controller_leader", "sllbrd_controller_reconciles_total",
		"sllbrd_controller_service_endpoints", "sllbrd_controller_service_endpoints_held", "sllbrd_controller_service_pods_over_limit", "sllbrd_controller_service_pods_skipped"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "sllbrd_controller_reconcile_duration_seconds"); n != 1 {
		t.Errorf("%d duration series, want 1 (Service)", n)
	}
}
