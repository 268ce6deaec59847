package metrics

import (
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/targetbfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// registerAll registers every collector of the package on reg, each with
// data, the way sllbrd wires them.
func registerAll(t *testing.T, reg prometheus.Registerer) {
	t.Helper()
	cfg := NewConfig()
	cfg.ObserveApply(1, time.Now().Add(-time.Millisecond), time.Now(), nil)
	cfg.SetProblems(map[string]int{"unknown_service": 1})
	cfg.ObserveComponent("dataplane", nil)
	ctl := NewController()
	ctl.SetLeader(true)
	ctl.ObserveReconcile("Service", ResultSuccess, time.Millisecond)
	ctl.SetService("service-a", 3, 1, map[string]int{"NoNetworkStatus": 2})
	ctl.SetServiceHeld("service-a", 1)
	tgt := NewTarget()
	tgt.ObserveApply(targetnet.Outcome{Generation: 1, Result: targetnet.Result{Gateways: []targetnet.GatewayResult{{Name: "sllb-a"}}}})
	tgt.ObserveStatusWrite(nil)
	node := &fakeTargetNode{}
	node.set(map[string]int{"applied": 1, "not_ready": 0, "no_sandbox": 0, "refused": 0}, true, 1)
	reg.MustRegister(
		NewEngineCollector(trafficEngine(t)),
		NewNFQueueCollector(fakeQueues, WithProcStatsPath(writeProcFile(t, procTable))),
		NewBFDCollector(bfdWithDiscards{BFDStatsFunc(func() []bfd.Stats { return []bfd.Stats{upSession(), downSession()} }), bfd.DiscardCounts{}}),
		NewBGPCollector(func() []BGPPeer {
			return []BGPPeer{{Peer: netip.MustParseAddr("192.0.2.254"), Router: "gw", State: BGPStateIdle}}
		}),
		cfg, ctl, tgt,
		newTargetNodeCollector(node), // the node daemon's own; the rest of its exposition is tgt's (TargetNode)
		NewTargetBFD(func() targetbfd.Stats { return targetbfd.Stats{Sessions: map[bfd.State]int{bfd.StateUp: 1}} }),
		ReadyGauge(func() (bool, []string) { return true, nil }),
		NewLivenessCollector(livenessSample()),
	)
}

func TestExpositionPassesPromlint(t *testing.T) {
	reg := NewRegistry()
	registerAll(t, reg)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sllbrd := 0
	for _, mf := range mfs {
		if len(mf.GetName()) > 7 && mf.GetName()[:7] == "sllbrd_" {
			sllbrd++
		}
	}
	if sllbrd < 40 {
		t.Fatalf("only %d sllbrd_ metric families gathered; some collector exported nothing", sllbrd)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestPromlintCatchesBadNames makes sure the lint test above can fail.
func TestPromlintCatchesBadNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "sllbrd_things", Help: "No _total suffix."}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := promlint.NewWithMetricFamilies(mfs).Lint(); err != nil || len(problems) == 0 {
		t.Fatalf("promlint found %v (error %v) in a counter without _total", problems, err)
	}
}

// TestCollectorsArePedantic gathers every collector with a pedantic
// registry: what they collect must match what they describe.
func TestCollectorsArePedantic(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	registerAll(t, reg)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}
