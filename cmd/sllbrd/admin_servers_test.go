package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sllbrd/sllbrd/internal/admin"
)

// TestDiagnosticsMetrics: the health of each diagnostics server is
// exported per server and passes promlint.
func TestDiagnosticsMetrics(t *testing.T) {
	diag := admin.NewDiagnostics(slog.New(slog.DiscardHandler))
	k, err := diag.Start(admin.ServerMetrics, func() (func(context.Context) error, error) {
		return func(ctx context.Context) error { <-ctx.Done(); return nil }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(diagnosticsCollector{diag})
	want := `
# HELP sllbrd_diagnostics_server_serving Whether a diagnostics server (admin socket, metrics endpoint, pprof) serves (1), or failed and is opened again after a backoff (0); its failures never stop forwarding.
# TYPE sllbrd_diagnostics_server_serving gauge
sllbrd_diagnostics_server_serving{server="metrics"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sllbrd_diagnostics_server_serving"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 || testutil.CollectAndCount(diagnosticsCollector{diag}) != 3 {
		t.Errorf("promlint: %v, %v; %d series", problems, err, testutil.CollectAndCount(diagnosticsCollector{diag}))
	}
}

// TestRunWithAdminFailsOnABusyAddress: the controller's and the target's
// endpoint is opened before they start, and a port in use fails the start.
func TestRunWithAdminFailsOnABusyAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ran := false
	err = runWithAdmin(context.Background(), slog.New(slog.DiscardHandler), busy.Addr().String(),
		func() (bool, []string) { return true, nil }, func(context.Context) error { ran = true; return nil })
	if err == nil || !strings.Contains(err.Error(), "listen") || ran {
		t.Fatalf("runWithAdmin on a busy address = %v (ran %v), want a listen error before running", err, ran)
	}
}

// TestRunWithAdminEndsWithRun: the endpoint stops when run returns, also
// without an error, and run's result is returned.
func TestRunWithAdminEndsWithRun(t *testing.T) {
	for _, want := range []error{nil, errors.New("boom")} {
		done := make(chan error, 1)
		go func() {
			done <- runWithAdmin(context.Background(), slog.New(slog.DiscardHandler), "127.0.0.1:0",
				func() (bool, []string) { return true, nil }, func(context.Context) error { return want })
		}()
		select {
		case err := <-done:
			if !errors.Is(err, want) {
				t.Fatalf("runWithAdmin = %v, want %v", err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("runWithAdmin still running 10 s after run returned %v", want)
		}
	}
}
