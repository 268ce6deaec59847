package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
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
// endpoint and pprof are opened before they start, and a port in use fails
// the start.
func TestRunWithAdminFailsOnABusyAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		addrs adminAddresses
		want  string
	}{
		{adminAddresses{metrics: busy.Addr().String()}, "metrics: listen on"},
		{adminAddresses{metrics: "127.0.0.1:0", pprof: busy.Addr().String()}, "pprof: listen on"},
	} {
		ran := false
		err = runWithAdmin(context.Background(), slog.New(slog.DiscardHandler), tc.addrs,
			func() (bool, []string) { return true, nil }, func(context.Context) error { ran = true; return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) || ran {
			t.Errorf("runWithAdmin on %+v, one busy = %v (ran %v), want %q before running", tc.addrs, err, ran, tc.want)
		}
	}
}

// TestRunWithAdminServesPprof: with --pprof-address, the controller's and
// the target's runWithAdmin serve net/http/pprof there next to their admin
// endpoint, export it as a diagnostics server, and close it when run
// returns.
func TestRunWithAdminServesPprof(t *testing.T) {
	listening := make(chan [2]string, 4) // message, address
	log := slog.New(listeningHandler(listening))
	stop, done := make(chan struct{}), make(chan error, 1)
	stopRun := sync.OnceFunc(func() { close(stop) })
	defer stopRun()
	go func() {
		done <- runWithAdmin(context.Background(), log, adminAddresses{metrics: "127.0.0.1:0", pprof: "127.0.0.1:0"},
			func() (bool, []string) { return true, nil }, func(context.Context) error { <-stop; return nil })
	}()
	addrs := map[string]string{}
	for len(addrs) < 2 {
		select {
		case l := <-listening:
			addrs[l[0]] = l[1]
		case err := <-done:
			t.Fatalf("runWithAdmin = %v before serving", err)
		case <-time.After(10 * time.Second):
			t.Fatalf("after 10 s, listening: %v; want the admin endpoint and pprof", addrs)
		}
	}
	pprofAddr, metricsAddr := addrs["pprof listening"], addrs["admin endpoint listening"]
	if pprofAddr == "" || metricsAddr == "" {
		t.Fatalf("listening: %v; want the admin endpoint and pprof", addrs)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(url string) (int, string, error) {
		resp, err := client.Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	if code, body, err := get("http://" + pprofAddr + "/debug/pprof/"); err != nil || code != http.StatusOK || !strings.Contains(body, "heap") {
		t.Errorf("GET /debug/pprof/ on %s: %d, %v; body %.200q", pprofAddr, code, err, body)
	}
	if code, body, err := get("http://" + pprofAddr + "/metrics"); err != nil || code != http.StatusNotFound {
		t.Errorf("GET /metrics on pprof's %s: %d, %v; want 404 (pprof only) %.200q", pprofAddr, code, err, body)
	}
	if _, body, err := get("http://" + metricsAddr + "/metrics"); err != nil || !strings.Contains(body, `sllbrd_diagnostics_server_serving{server="pprof"} 1`) {
		t.Errorf("GET /metrics on %s: %v; want pprof serving in %.2000q", metricsAddr, err, body)
	}
	stopRun()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runWithAdmin = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runWithAdmin still running 10 s after run returned")
	}
	if _, _, err := get("http://" + pprofAddr + "/debug/pprof/"); err == nil {
		t.Errorf("pprof on %s still answers after runWithAdmin returned", pprofAddr)
	}
}

// listeningHandler sends the message and the address of every log record
// with an "address" to ch (the servers' "... listening" lines).
type listeningHandler chan<- [2]string

func (listeningHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h listeningHandler) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h listeningHandler) WithGroup(string) slog.Handler          { return h }

func (h listeningHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "address" {
			select { // never block a server; the test reads the first ones
			case h <- [2]string{r.Message, a.Value.String()}:
			default:
			}
			return false
		}
		return true
	})
	return nil
}

// TestRunWithAdminEndsWithRun: the endpoint stops when run returns, also
// without an error, and run's result is returned.
func TestRunWithAdminEndsWithRun(t *testing.T) {
	for _, want := range []error{nil, errors.New("boom")} {
		done := make(chan error, 1)
		go func() {
			done <- runWithAdmin(context.Background(), slog.New(slog.DiscardHandler), adminAddresses{metrics: "127.0.0.1:0"},
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
