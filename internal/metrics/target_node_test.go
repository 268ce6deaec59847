package metrics

import (
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// fakeTargetNode is a TargetNodeSource the test sets.
type fakeTargetNode struct {
	mu          sync.Mutex
	pods        map[string]int
	up          bool
	unavailable uint64
}

func (f *fakeTargetNode) PodStates() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.pods)
}

func (f *fakeTargetNode) RuntimeUp() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.up
}

func (f *fakeTargetNode) NamespaceUnavailable() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unavailable
}

func (f *fakeTargetNode) set(pods map[string]int, up bool, unavailable uint64) {
	f.mu.Lock()
	f.pods, f.up, f.unavailable = pods, up, unavailable
	f.mu.Unlock()
}

// TestTargetNodeMetrics: the node's own metrics are read from the source
// at each scrape; the Target's are all there but the applied generation.
func TestTargetNodeMetrics(t *testing.T) {
	src := &fakeTargetNode{}
	src.set(map[string]int{"applied": 3, "not_ready": 1, "no_sandbox": 0, "refused": 2}, true, 7)
	tgt := NewTarget()
	tgt.ObserveApply(targetnet.Outcome{Generation: 4, Result: targetnet.Result{Gateways: []targetnet.GatewayResult{{Name: "sllb-a"}}}})
	tgt.ObserveStatusWrite(nil)
	m := NewTargetNode(tgt, src)
	names := []string{"sllbrd_target_pods", "sllbrd_target_runtime_up", "sllbrd_target_namespace_unavailable_total"}
	want := `# HELP sllbrd_target_namespace_unavailable_total Applies skipped because the pod had no network namespace (no ready sandbox); each is tried again with backoff.
# TYPE sllbrd_target_namespace_unavailable_total counter
sllbrd_target_namespace_unavailable_total 7
# HELP sllbrd_target_pods Pods of the node the node daemon follows, by state (applied, not_ready, no_sandbox, refused); each pod in exactly one.
# TYPE sllbrd_target_pods gauge
sllbrd_target_pods{state="applied"} 3
sllbrd_target_pods{state="no_sandbox"} 0
sllbrd_target_pods{state="not_ready"} 1
sllbrd_target_pods{state="refused"} 2
# HELP sllbrd_target_runtime_up 1 while the container runtime (CRI) answered the node daemon's last probe, 0 otherwise.
# TYPE sllbrd_target_runtime_up gauge
sllbrd_target_runtime_up 1
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m, "sllbrd_target_applied_generation"); n != 0 {
		t.Errorf("%d series of sllbrd_target_applied_generation in node mode", n)
	}
	for _, name := range []string{"sllbrd_target_vips", "sllbrd_target_next_hops", "sllbrd_target_next_hops_kept", "sllbrd_target_conflicts",
		"sllbrd_target_applies_total", "sllbrd_target_apply_errors_total", "sllbrd_target_apply_duration_seconds",
		"sllbrd_target_status_writes_total"} {
		if n := testutil.CollectAndCount(m, name); n == 0 {
			t.Errorf("%s missing in node mode", name)
		}
	}

	// Read at scrape time: a pod gone from every state, the runtime down.
	src.set(map[string]int{"applied": 2, "not_ready": 1, "no_sandbox": 1, "refused": 1}, false, 9)
	want = strings.NewReplacer(`"applied"} 3`, `"applied"} 2`, `"no_sandbox"} 0`, `"no_sandbox"} 1`, `"refused"} 2`, `"refused"} 1`,
		"sllbrd_target_runtime_up 1\n", "sllbrd_target_runtime_up 0\n", "total 7", "total 9").Replace(want)
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

// TestTargetNodeExposition: the node daemon's exposition alone (as
// `sllbrd target --node` registers it) passes a pedantic registry and
// promlint.
func TestTargetNodeExposition(t *testing.T) {
	src := &fakeTargetNode{}
	src.set(map[string]int{"applied": 1, "not_ready": 0, "no_sandbox": 0, "refused": 0}, true, 0)
	tgt := NewTarget()
	tgt.ObserveApply(targetnet.Outcome{Result: targetnet.Result{Gateways: []targetnet.GatewayResult{{Name: "sllb-a"}}}})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewTargetNode(tgt, src))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) < 10 {
		t.Fatalf("only %d metric families", len(mfs))
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
