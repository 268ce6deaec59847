package main

import (
	"context"
	"errors"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationOutOfDescriptorsKeepsForwarding runs the real sllbrd (with
// the default --on-exit remove) and lowers its RLIMIT_NOFILE (prlimit) to
// 0, so that every accept of the admin socket, the metrics endpoint and
// pprof fails with EMFILE while clients connect. Meanwhile sllbrd keeps
// running, its table and policy rules stay as they were and every flow
// reaches the same target; once descriptors are free again the three
// servers answer, and the failed accepts are in the metrics and the log.
func TestIntegrationOutOfDescriptorsKeepsForwarding(t *testing.T) {
	require.Lab(t)
	forEachDataplane(t, func(t *testing.T, mode string) {
		l := dataplaneLab(t, 1, mode)
		dir := t.TempDir()
		if err := e2e.Write(dir, e2e.Config{Services: allTargets, Routes: webRoute}); err != nil {
			t.Fatal(err)
		}
		const pprofAddr = "127.0.0.1:6060"
		inst, err := e2e.Start(l, lab.LBName(1), sllbrdBinary, dir, dataplaneArgs(l, "--queues", "2", "--pprof-address", pprofAddr)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { logTail(t, inst) })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := inst.WaitProgrammed(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := l.RouteVIPsVia(ctx, 1); err != nil {
			t.Fatal(err)
		}
		opts := []lab.FlowOptions{{VIP: vip4, Port: 5001, Count: 50, SrcPortBase: 37000}, {VIP: vip6, Port: 5001, Count: 50, SrcPortBase: 37000}}
		var before []map[lab.Flow]string
		for _, o := range opts {
			before = append(before, flows(t, l, o))
		}
		table, rules := listOurTable(t, ctx, l), policyRules(t, ctx, l)

		restore := limitDescriptors(t, inst.Proc.PID)
		for range 3 { // connections the servers cannot accept
			if err := showConfig(inst.AdminSocket, 2*time.Second); err == nil {
				t.Fatal("the admin socket answered with no descriptor free")
			}
		}
		if status, _, err := inst.Get("/readyz"); err == nil {
			t.Fatalf("the metrics endpoint answered %d with no descriptor free", status)
		}
		if _, _, err := inst.GetAt(pprofAddr, "/debug/pprof/"); err == nil {
			t.Fatal("pprof answered with no descriptor free")
		}
		// Longer than a daemon that failed would take to stop and remove
		// its rules (the metrics endpoint's graceful shutdown is 5 s).
		time.Sleep(7 * time.Second)
		select {
		case <-inst.Proc.Done():
			t.Fatalf("sllbrd exited while accepts failed: %v", inst.Proc.Err())
		default:
		}
		for i, o := range opts {
			if during := flows(t, l, o); !maps.Equal(before[i], during) {
				t.Errorf("%d of %d %v flows reached another target while accepts failed", differing(before[i], during), len(during), o.VIP)
			}
		}
		if got := listOurTable(t, ctx, l); got != table {
			t.Errorf("the table changed while accepts failed:\nbefore %s\nafter  %s", table, got)
		}
		if got := policyRules(t, ctx, l); got != rules {
			t.Errorf("the policy rules changed while accepts failed:\nbefore %s\nafter  %s", rules, got)
		}

		restore()
		waitFor(t, 15*time.Second, "the admin socket answers again", func() bool { return showConfig(inst.AdminSocket, 2*time.Second) == nil })
		waitFor(t, 15*time.Second, "pprof answers again", func() bool {
			status, _, err := inst.GetAt(pprofAddr, "/debug/pprof/")
			return err == nil && status == 200
		})
		if err := inst.WaitProgrammed(ctx, 1); err != nil {
			t.Fatalf("after descriptors are free again: %v", err)
		}
		for _, server := range []string{admin.ServerAdminSocket, admin.ServerMetrics, admin.ServerPprof} {
			if n, ok, err := inst.Metric(`sllbrd_diagnostics_accept_errors_total{server="` + server + `"}`); err != nil || !ok || n < 1 {
				t.Errorf("%s: %v failed accepts in the metrics (found %v, %v), want 1 or more", server, n, ok, err)
			}
			if n, ok, err := inst.Metric(`sllbrd_diagnostics_server_serving{server="` + server + `"}`); err != nil || !ok || n != 1 {
				t.Errorf("%s: serving %v (found %v, %v), want 1", server, n, ok, err)
			}
		}
		if log, err := os.ReadFile(inst.Proc.LogPath); err != nil || !strings.Contains(string(log), "accept failed") || !strings.Contains(string(log), "too many open files") {
			t.Errorf("the log does not report the failed accepts (%v)", err)
		}
	})
}

// limitDescriptors sets process pid's RLIMIT_NOFILE soft limit to 0: it
// keeps the descriptors it holds and can open no other (a limit at its
// count would let one through whenever one of them is closed). It returns
// the function that restores the limit (also run at cleanup).
func limitDescriptors(t *testing.T, pid int) (restore func()) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		t.Fatal(err)
	}
	restore = sync.OnceFunc(func() {
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &old, nil); err != nil && !errors.Is(err, unix.ESRCH) {
			t.Errorf("restore RLIMIT_NOFILE of %d: %v", pid, err)
		}
	})
	t.Cleanup(restore)
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 0, Max: old.Max}, nil); err != nil {
		t.Fatal(err)
	}
	return restore
}

// showConfig asks the admin socket for `show config` within timeout.
func showConfig(socket string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var cfg admin.Config
	return admin.Call(ctx, socket, admin.Request{Command: admin.CommandShow, Topic: admin.TopicConfig}, &cfg)
}

// policyRules lists lb1's policy routing rules of both families.
func policyRules(t *testing.T, ctx context.Context, l *lab.Lab) string {
	t.Helper()
	var b strings.Builder
	for _, fam := range []string{"-4", "-6"} {
		out, err := l.Exec(ctx, lab.LBName(1), "ip", fam, "rule", "list")
		if err != nil {
			t.Fatalf("ip rule: %v: %s", err, out)
		}
		b.WriteString(out)
	}
	return b.String()
}
