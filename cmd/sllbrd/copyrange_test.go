package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/reconcile"
	"github.com/sllbrd/sllbrd/model"
)

const copyRangeManifests = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: sllb-a}
spec:
  gatewayClassName: x
  listeners: [{name: all, port: 4000, protocol: TCP}]
  infrastructure:
    annotations:
      meridio-experiment/networks: '[{"name":"n","interface":"net1"}]'
      meridio-experiment/network-subnets: '["169.111.100.0/24"]'
---
apiVersion: v1
kind: Service
metadata:
  name: service-a
  labels: {service.kubernetes.io/service-proxy-name: sllb-a}
---
apiVersion: meridio.experiment.gateway.api.poc/v1alpha1
kind: L34Route
metadata: {name: within}
spec:
  parentRefs: [{name: sllb-a}]
  backendRefs: [{name: service-a, port: 1}]
  priority: 1
  destinationCIDRs: [20.0.0.1/32]
  protocols: [TCP]
  byteMatches: ["tcp[104:4] = 1"]
---
apiVersion: meridio.experiment.gateway.api.poc/v1alpha1
kind: L34Route
metadata: {name: beyond}
spec:
  parentRefs: [{name: sllb-a}]
  backendRefs: [{name: service-a, port: 1}]
  priority: 2
  destinationCIDRs: [20.0.0.2/32]
  protocols: [TCP]
  byteMatches: ["tcp[105:4] = 1"]
`

// TestByteMatchBeyondCopyRangeIsCountedAndLeftOut runs the configuration
// source as sllbrd wires it with --copy-range 128 (108 bytes of an IPv4
// packet's transport header): the route whose match ends at byte 109 is
// left out of the applied state and counted in sllbrd_config_problems.
func TestByteMatchBeyondCopyRangeIsCountedAndLeftOut(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(copyRangeManifests), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &config{gateway: "sllb-a", manifests: dir, copyRange: 128}
	applied := make(chan *model.State, 16)
	loop := reconcile.New(func(_ context.Context, d reconcile.Desired) error { applied <- d.State; return nil })
	m := metrics.NewConfig()
	src, err := newConfigSource(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), loop, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- src.Run(ctx) }()
	go func() { done <- loop.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; <-done })

	select {
	case st := <-applied:
		var names []string
		for _, r := range st.Routes {
			names = append(names, r.Name)
		}
		if !slices.Equal(names, []string{"default/within"}) {
			t.Errorf("applied routes %v, want only default/within", names)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no state applied within 10s")
	}
	if got := problemGauge(t, m, "L34Route"); got != 1 {
		t.Errorf("sllbrd_config_problems{kind=L34Route} = %v, want 1", got)
	}
}

// problemGauge reads sllbrd_config_problems{kind} from m.
func problemGauge(t *testing.T, m *metrics.Config, kind string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "sllbrd_config_problems" {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return metric.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no sllbrd_config_problems{kind=%q}", kind)
	return 0
}
