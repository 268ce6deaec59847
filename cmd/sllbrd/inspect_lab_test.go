package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationShowAndExplain runs the real sllbrd in the lab and asks
// it with the real binary (`sllbrd show`, `explain`, `log-level`, no
// shell) over its admin socket: the configuration and endpoints it shows
// are the lab's, and for every flow the clients really sent, explain names
// the target that answered it, without counting the probes.
func TestIntegrationShowAndExplain(t *testing.T) {
	require.Lab(t)
	l := labSetup(t, 1)
	dir := t.TempDir()
	if err := e2e.Write(dir, e2e.Config{Services: allTargets, Routes: webRoute}); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(l.TempDir(), "run", "admin.sock") // a directory sllbrd creates
	inst, err := e2e.Start(l, lab.LBName(1), sllbrdBinary, dir, "--queues", "2", "--log-level", "info",
		"--admin-socket", socket, "--pprof-address", "127.0.0.1:6060")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logTail(t, inst) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inst.WaitProgrammed(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := l.RouteVIPsVia(ctx, 1); err != nil {
		t.Fatal(err)
	}
	checkSocketModes(t, socket)

	var cfg admin.Config
	sllbrdJSON(t, socket, &cfg, "show", "config")
	if cfg.Gateway != "sllb-a" || cfg.Source.Kind != "file" || cfg.Source.Path != dir || cfg.AppliedGeneration != 1 || !cfg.Ready {
		t.Errorf("show config: %+v", cfg)
	}
	var svcs admin.Services
	sllbrdJSON(t, socket, &svcs, "show", "services")
	checkLabEndpoints(t, svcs)
	var sessions admin.Sessions
	sllbrdJSON(t, socket, &sessions, "show", "sessions")
	var frags admin.Fragments
	sllbrdJSON(t, socket, &frags, "show", "fragments")
	if frags.Capacity < 16384 || frags.Queues != 2 || frags.HoldLimitPerQueue == 0 {
		t.Errorf("show fragments: %+v", frags)
	}
	if out := sllbrd(t, socket, "show", "routes"); !strings.Contains(out, "service-a") || !strings.Contains(out, "dport 80,5000-5010") {
		t.Errorf("show routes:\n%s", out)
	}

	for _, vip := range []netip.Addr{vip4, vip6} {
		served := flows(t, l, lab.FlowOptions{VIP: vip, Port: 5000, Count: 40, SrcPortBase: 21000})
		before, _, _ := inst.Metric(`sllbrd_packets_total{reason="balanced"}`)
		for f, target := range served {
			var x admin.Explanation
			sllbrdJSON(t, socket, &x, "explain", "udp", f.Src.String(), f.Dst.String())
			if x.Endpoint == nil || targetOf(x.Endpoint.Address) != target || x.Route == nil || x.Verdict != "accept" {
				t.Errorf("flow %v went to %s; explain says %+v (endpoint %+v)", f, target, x, x.Endpoint)
			}
		}
		if after, _, _ := inst.Metric(`sllbrd_packets_total{reason="balanced"}`); after != before {
			t.Errorf("explain counted packets: balanced %v -> %v", before, after)
		}
	}
	checkLogLevel(t, socket, inst)
	checkPprof(t, inst)
}

// sllbrd runs the built binary as a client of socket and returns stdout.
func sllbrd(t *testing.T, socket string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sllbrdBinary, append(args, "--admin-socket", socket)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sllbrd %v: %v: %s", args, err, stderr.String())
	}
	return stdout.String()
}

func sllbrdJSON(t *testing.T, socket string, out any, args ...string) {
	t.Helper()
	if err := json.Unmarshal([]byte(sllbrd(t, socket, append(args, "-o", "json")...)), out); err != nil {
		t.Fatalf("sllbrd %v -o json: %v", args, err)
	}
}

func checkSocketModes(t *testing.T, socket string) {
	t.Helper()
	for path, want := range map[string]fs.FileMode{socket: admin.SocketMode | fs.ModeSocket, filepath.Dir(socket): admin.DirMode | fs.ModeDir} {
		if fi, err := os.Lstat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v (%v), want mode %v", path, fi.Mode(), err, want)
		}
	}
}

// checkLabEndpoints: service-a has the lab's three targets, both families,
// ready, sharing each table about evenly.
func checkLabEndpoints(t *testing.T, svcs admin.Services) {
	t.Helper()
	if len(svcs.Services) != 1 || len(svcs.Services[0].Endpoints) != 3 {
		t.Fatalf("show services: %+v", svcs)
	}
	for i, ep := range svcs.Services[0].Endpoints {
		want := lab.TargetAddrs(i + 1)
		if ep.IPv4 == nil || ep.IPv6 == nil || ep.IPv4.Address != want.V4.Addr() || ep.IPv6.Address != want.V6.Addr() {
			t.Errorf("endpoint %d: %+v %+v, want %v", ep.ID, ep.IPv4, ep.IPv6, want)
			continue
		}
		for _, a := range []*admin.EndpointAddress{ep.IPv4, ep.IPv6} {
			if !a.Ready || a.Share < 0.3 || a.Share > 0.37 {
				t.Errorf("endpoint %d %v: ready %v share %v", ep.ID, a.Address, a.Ready, a.Share)
			}
		}
	}
}

// targetOf names the lab target with address a (of the four a lab may
// have), "none" for another address.
func targetOf(a netip.Addr) string {
	for i := 1; i <= 4; i++ {
		if lab.TargetAddrs(i).For(a) == a {
			return lab.TargetName(i)
		}
	}
	return "none"
}

// checkLogLevel turns debug logging on at run time and sees a debug record
// appear in the daemon's log.
func checkLogLevel(t *testing.T, socket string, inst *e2e.Instance) {
	t.Helper()
	if out := sllbrd(t, socket, "log-level"); out != "log level INFO\n" {
		t.Fatalf("log-level: %q", out)
	}
	if b, _ := os.ReadFile(inst.Proc.LogPath); bytes.Contains(b, []byte(`"level":"DEBUG"`)) {
		t.Fatal("debug records logged at level info")
	}
	if out := sllbrd(t, socket, "log-level", "debug"); out != "log level DEBUG (was INFO)\n" {
		t.Fatalf("log-level debug: %q", out)
	}
	sllbrd(t, socket, "show", "config") // logged at debug ("admin request")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(inst.Proc.LogPath)
		if bytes.Contains(b, []byte(`"level":"DEBUG","msg":"admin request"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no debug record after log-level debug; log ends:\n%s", tail(b, 1000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	sllbrd(t, socket, "log-level", "info")
}

// checkPprof fetches a heap profile from inside the LB's namespace.
func checkPprof(t *testing.T, inst *e2e.Instance) {
	t.Helper()
	status, body, err := inst.GetAt("127.0.0.1:6060", "/debug/pprof/heap?debug=1")
	if err != nil || status != 200 || !strings.Contains(body, "heap profile") {
		t.Errorf("pprof heap profile: status %d, %v: %.200s", status, err, body)
	}
}
