package main

import (
	"context"
	"maps"
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

// TestIntegrationXDPFollowsTheNeighbourTable: the XDP program writes the
// next hop's MAC itself, so it must follow the neighbour table at once. A
// target takes a new MAC and the LB's entries are replaced with it: 200 ms
// later every flow is answered by its target again, all forwarded by XDP
// (a program still holding the old MAC sends them where the target drops
// them). The LB's entries are flushed: every flow is
// still answered (the XDP program passes what has no MAC to the tc program,
// which resolves it), and once resolved XDP forwards them all again.
func TestIntegrationXDPFollowsTheNeighbourTable(t *testing.T) {
	require.Lab(t)
	l := dataplaneLab(t, 1, labBPFXDP)
	_, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	inst := insts[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := []lab.FlowOptions{{VIP: vip4, Port: 5001, Count: 60, SrcPortBase: 48000}, {VIP: vip6, Port: 5001, Count: 60, SrcPortBase: 48000}}
	var before []map[lab.Flow]string
	for _, o := range opts {
		before = append(before, flows(t, l, o))
	}
	action := func(name string) float64 {
		t.Helper()
		n, _, err := inst.Metric(`sllbrd_bpf_packets_total{action="` + name + `"}`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// probe sends the flows again and wants each answered by its target;
	// it returns how many packets the XDP and the tc program forwarded.
	probe := func(when string) (xdp, tc float64) {
		t.Helper()
		x0, t0 := action("xdp-redirect"), action("redirect")
		for i, o := range opts {
			if got := flows(t, l, o); !maps.Equal(got, before[i]) {
				t.Errorf("%s: %d of %d %v flows unanswered or answered by another target", when, differing(before[i], got)+len(before[i])-len(got), len(before[i]), o.VIP)
			}
		}
		xdp, tc = action("xdp-redirect")-x0, action("redirect")-t0
		t.Logf("%s: XDP forwarded %v packets, tc %v", when, xdp, tc)
		return xdp, tc
	}
	if xdp, tc := probe("at first"); xdp == 0 || tc != 0 {
		t.Fatalf("at first: XDP forwarded %v, tc %v; want all by XDP", xdp, tc)
	}

	// t1 takes a new MAC; the LB learns it (as from a gratuitous ARP).
	const newMAC = "02:00:00:00:99:01"
	t1 := lab.TargetAddrs(1)
	if out, err := l.Exec(ctx, lab.TargetName(1), "ip", "link", "set", "dev", lab.TargetLink, "address", newMAC); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, a := range []string{t1.V4.Addr().String(), t1.V6.Addr().String()} {
		if out, err := l.Exec(ctx, lab.LBName(1), "ip", "neigh", "replace", a, "lladdr", newMAC, "dev", lab.TargetLink, "nud", "reachable"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if xdp, tc := probe("200 ms after t1's new MAC"); xdp == 0 || tc != 0 {
		t.Errorf("after t1's new MAC: XDP forwarded %v, tc %v; want all by XDP", xdp, tc)
	}

	// The LB forgets every neighbour: the tc program forwards (and so
	// resolves) what XDP has no MAC for.
	if out, err := l.Exec(ctx, lab.LBName(1), "ip", "neigh", "flush", "dev", lab.TargetLink); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	time.Sleep(200 * time.Millisecond)
	probe("200 ms after the flush")
	time.Sleep(time.Second)
	if xdp, tc := probe("1.2 s after the flush"); xdp == 0 || tc != 0 {
		t.Errorf("after the neighbours were resolved again: XDP forwarded %v, tc %v; want all by XDP", xdp, tc)
	}
}

// TestIntegrationBPFFollowsTheEgressMTU: the program redirects only what
// fits its next hop's MTU, so a lowered MTU must reach it at once, not at
// the next apply. lb1's link towards the targets (both ends) goes down to
// 1280; 300 ms later datagrams of 1,400 bytes are each answered (the
// program hands them to the stack, which sends fragmentation needed or
// packet too big, and the client's retry comes in fragments), where a
// program still at 1500 would redirect them into the smaller link, which
// drops them, and nothing would tell the client.
func TestIntegrationBPFFollowsTheEgressMTU(t *testing.T) {
	require.Lab(t)
	l := dataplaneLab(t, 1, dataplaneBPF)
	_, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	small := func(when string) {
		t.Helper()
		for _, vip := range []netip.Addr{vip4, vip6} {
			o := lab.FlowOptions{VIP: vip, Port: 5001, Count: 20, SrcPortBase: 49100}
			if got := flows(t, l, o); len(got) != o.Count {
				t.Errorf("%s: %v: %d of %d flows answered", when, vip, len(got), o.Count)
			}
		}
	}
	small("before")
	for _, c := range [][]string{{lab.LBName(1), lab.TargetLink}, {lab.SwitchNode, lab.LBName(1) + "-" + lab.TargetLink}} {
		if out, err := l.Exec(ctx, c[0], "ip", "link", "set", "dev", c[1], "mtu", "1280"); err != nil {
			t.Fatalf("%s: %v: %s", c[0], err, out)
		}
	}
	tooBig := func() float64 {
		t.Helper()
		n, _, err := insts[0].Metric(`sllbrd_bpf_packets_total{action="too-big"}`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := tooBig()
	time.Sleep(300 * time.Millisecond)
	for _, vip := range []netip.Addr{vip4, vip6} {
		o := lab.FlowOptions{VIP: vip, Port: 5001, Count: 20, SrcPortBase: 49000, Payload: make([]byte, 1400)}
		if got := flows(t, l, o); len(got) != o.Count {
			t.Errorf("%v: %d of %d flows of 1,400-byte datagrams answered", vip, len(got), o.Count)
		}
	}
	if n := tooBig() - before; n == 0 {
		t.Errorf("the program handed no datagram to the stack as too big")
	} else {
		t.Logf("%v datagrams too big for the new MTU went to the stack", n)
	}
	small("after") // what fits is still redirected (checkBPFPath)
}
