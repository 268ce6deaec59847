package admin

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:6060":        true,
		"127.1.2.3:6060":        true,
		"[::1]:6060":            true,
		"[::ffff:127.0.0.1]:80": true,
		":6060":                 false,
		"0.0.0.0:6060":          false,
		"[::]:6060":             false,
		"10.0.0.1:6060":         false,
		"localhost:6060":        false, // a name may resolve to anything
		"[fe80::1%eth0]:6060":   false,
		"127.0.0.1":             false,
	} {
		if err := CheckLoopback(addr); (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v, want accepted %v", addr, err, ok)
		}
	}
	if _, err := ListenPprof(context.Background(), "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("ListenPprof on all addresses: %v", err)
	}
}

func TestPprofServesProfilesOnly(t *testing.T) {
	ln, err := ListenPprof(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServePprof(ctx, ln, slog.New(slog.DiscardHandler)) }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: 30 * time.Second}
	for path, want := range map[string]int{
		"/debug/pprof/":                  http.StatusOK,
		"/debug/pprof/heap?debug=1":      http.StatusOK,
		"/debug/pprof/goroutine?debug=1": http.StatusOK,
		"/debug/pprof/cmdline":           http.StatusOK,
		"/metrics":                       http.StatusNotFound,
		"/":                              http.StatusNotFound,
	} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d (%.80s)", path, resp.StatusCode, want, body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ServePprof after its context ended: %v", err)
	}
}
