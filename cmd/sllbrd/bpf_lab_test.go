package main

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// deploymentCaps are the capabilities deploy/sllbrd/deployment.yaml adds
// (deploy's tests pin that list), as setpriv names them.
const deploymentCaps = "+net_admin,+net_raw,+net_bind_service"

// TestIntegrationBPFPathPrivileges pins the privileges docs/deploy.md
// gives --dataplane bpf: with the deployment's capabilities, CAP_BPF and
// CAP_PERFMON, and nothing else (no CAP_SYS_ADMIN, which implies both),
// sllbrd starts and its program forwards; without CAP_BPF, or with it but
// without CAP_PERFMON (the verifier then refuses the program's packet
// pointer arithmetic), it refuses to start, naming what is missing, and
// leaves nothing in the kernel; --dataplane kernel needs neither.
func TestIntegrationBPFPathPrivileges(t *testing.T) {
	require.Lab(t)
	l := labSetup(t, 1)
	dir := t.TempDir()
	if err := e2e.Write(dir, e2e.Config{Services: allTargets, Routes: webRoute}); err != nil {
		t.Fatal(err)
	}
	node := lab.LBName(1)
	start := func(name, caps, mode string) *e2e.Instance {
		t.Helper()
		socket := filepath.Join(l.TempDir(), name+".sock")
		p, err := l.StartInCgroup(node, name, nil, "setpriv", "--bounding-set=-all,"+caps, "--inh-caps=-all", "--",
			sllbrdBinary, "--gateway", "sllb-a", "--metrics-address", e2e.MetricsAddress, "--drain", "1s",
			"--admin-socket", socket, "--manifests", dir, "--dataplane", mode, "--queues", "2")
		if err != nil {
			t.Fatal(err)
		}
		inst := &e2e.Instance{Lab: l, Node: node, Proc: p, AdminSocket: socket}
		t.Cleanup(func() { logTail(t, inst) })
		return inst
	}

	// Without CAP_BPF or CAP_PERFMON: a clear refusal at start, nothing
	// left behind.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct{ name, caps, missing string }{
		{"sllbrd-nobpf", deploymentCaps, "missing: CAP_BPF, CAP_PERFMON"},
		{"sllbrd-noperfmon", deploymentCaps + ",+bpf", "missing: CAP_PERFMON"},
	} {
		inst := start(tc.name, tc.caps, dataplaneBPF)
		select {
		case <-inst.Proc.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: sllbrd --dataplane bpf still runs after 30 s", tc.name)
		}
		if inst.Proc.Err() == nil {
			t.Errorf("%s: sllbrd --dataplane bpf exited 0", tc.name)
		}
		out, err := os.ReadFile(inst.Proc.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "--dataplane bpf: needs CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN") || !strings.Contains(string(out), tc.missing) {
			t.Errorf("%s: the refusal does not say what is missing (%s):\n%s", tc.name, tc.missing, out)
		}
		if out, err := l.Exec(ctx, node, "nft", "list", "table", "inet", "sllbrd"); err == nil {
			t.Errorf("%s: the refused start left an nftables table:\n%s", tc.name, out)
		}
		for _, fam := range []string{"-4", "-6"} {
			if out, err := l.Exec(ctx, node, "ip", fam, "rule"); err != nil || strings.Contains(out, "fwmark") {
				t.Errorf("%s: ip %s rule after the refused start: %v\n%s", tc.name, fam, err, out)
			}
		}
	}

	// The kernel path does not need it.
	inst := start("sllbrd-kernel", deploymentCaps, dataplaneKernel)
	if err := inst.WaitProgrammed(ctx, 1); err != nil {
		t.Fatalf("--dataplane kernel with the deployment's capabilities: %v", err)
	}
	if err := inst.Proc.Terminate(15 * time.Second); err != nil {
		t.Fatal(err)
	}

	// The deployment's capabilities, CAP_BPF and CAP_PERFMON suffice, and
	// the program forwards.
	inst = start("sllbrd-bpf", deploymentCaps+",+bpf,+perfmon", dataplaneBPF)
	if err := inst.WaitProgrammed(ctx, 1); err != nil {
		t.Fatalf("--dataplane bpf with the deployment's capabilities, CAP_BPF and CAP_PERFMON: %v", err)
	}
	if err := l.RouteVIPsVia(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, vip := range []netip.Addr{vip4, vip6} {
		if got := flows(t, l, lab.FlowOptions{VIP: vip, Port: 5001, Count: 20, SrcPortBase: 47000}); len(got) != 20 {
			t.Errorf("%v: %d of 20 flows answered", vip, len(got))
		}
	}
	checkBPFPath(t, l, []*e2e.Instance{inst})
}
