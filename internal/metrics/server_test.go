package metrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// safeBuffer is a log sink the server's goroutines may write concurrently.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// brokenCollector always fails to collect.
type brokenCollector struct{}

var brokenDesc = prometheus.NewDesc("sllbrd_broken", "Always fails.", nil, nil)

func (brokenCollector) Describe(ch chan<- *prometheus.Desc) { ch <- brokenDesc }
func (brokenCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(brokenDesc, errors.New("source unavailable"))
}

func get(t *testing.T, h http.Handler, method, path string) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Code, rec.Body.String(), rec.Header()
}

func TestServerRoutes(t *testing.T) {
	notReady := []string{
		"configuration generation 3 not yet programmed: nft: busy",
		"bgp: no session established",
	}
	var ready struct {
		sync.Mutex
		ok      bool
		reasons []string
	}
	readyFunc := func() (bool, []string) {
		ready.Lock()
		defer ready.Unlock()
		return ready.ok, ready.reasons
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(ReadyGauge(readyFunc), brokenCollector{})
	logs := &safeBuffer{}
	h := NewServer("127.0.0.1:0", reg, readyFunc, WithLogger(slog.New(slog.NewTextHandler(logs, nil)))).Handler()

	for _, tc := range []struct {
		name           string
		ok             bool
		reasons        []string
		method, path   string
		wantCode       int
		wantBody       string // exact, unless wantContains
		wantContains   []string
		wantLogContain string
	}{
		{name: "healthz", method: "GET", path: "/healthz", wantCode: 200, wantBody: "ok\n"},
		{name: "healthz while not ready", reasons: notReady, method: "GET", path: "/healthz", wantCode: 200, wantBody: "ok\n"},
		{name: "readyz ready", ok: true, method: "GET", path: "/readyz", wantCode: 200, wantBody: "ok\n"},
		{name: "readyz not ready lists reasons", reasons: notReady, method: "GET", path: "/readyz", wantCode: 503,
			wantBody: notReady[0] + "\n" + notReady[1] + "\n"},
		{name: "readyz not ready without reasons", method: "GET", path: "/readyz", wantCode: 503, wantBody: "not ready\n"},
		{name: "metrics served despite a failing collector", ok: true, method: "GET", path: "/metrics", wantCode: 200,
			wantContains: []string{"sllbrd_ready 1\n", "# TYPE sllbrd_ready gauge"}, wantLogContain: "source unavailable"},
		{name: "metrics reflect readiness", method: "GET", path: "/metrics", wantCode: 200,
			wantContains: []string{"sllbrd_ready 0\n"}},
		{name: "root is not a route", method: "GET", path: "/", wantCode: 404},
		{name: "unknown path", method: "GET", path: "/debug/pprof/", wantCode: 404},
		{name: "sub path of a route", method: "GET", path: "/metrics/extra", wantCode: 404},
		{name: "other method", method: "POST", path: "/healthz", wantCode: 405},
		{name: "head", method: "HEAD", path: "/healthz", wantCode: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready.Lock()
			ready.ok, ready.reasons = tc.ok, tc.reasons
			ready.Unlock()
			code, body, hdr := get(t, h, tc.method, tc.path)
			if code != tc.wantCode {
				t.Fatalf("%s %s: status %d, want %d (body %q)", tc.method, tc.path, code, tc.wantCode, body)
			}
			if tc.wantBody != "" && body != tc.wantBody {
				t.Errorf("body %q, want %q", body, tc.wantBody)
			}
			if tc.wantBody != "" && !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
				t.Errorf("content type %q", hdr.Get("Content-Type"))
			}
			for _, s := range tc.wantContains {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q:\n%s", s, body)
				}
			}
			if tc.wantLogContain != "" && !strings.Contains(logs.String(), tc.wantLogContain) {
				t.Errorf("log lacks %q:\n%s", tc.wantLogContain, logs.String())
			}
		})
	}
}

func TestServerServesAndShutsDownGracefully(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s := NewServer(ln.Addr().String(), reg, func() (bool, []string) { return true, nil },
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithTimeouts(time.Second, time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()

	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" {
		t.Fatalf("healthz: %d %q", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := client.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

func TestServerRunBindsExactlyTheAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	quiet := WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, tc := range []struct {
		name, addr string
		wantErr    bool
	}{
		{"address in use", busy.Addr().String(), true},
		{"not an address", "256.0.0.1:1", true},
		{"free loopback port", "127.0.0.1:0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(tc.addr, prometheus.NewRegistry(), func() (bool, []string) { return true, nil }, quiet)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err := s.Run(ctx)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Run(%s) = %v, want error %v", tc.addr, err, tc.wantErr)
			}
		})
	}
}
