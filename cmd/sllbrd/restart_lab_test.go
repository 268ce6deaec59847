package main

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationRestartLosesNoFastPathPacket: with the kernel path (and
// with the eBPF datapath ahead of it, whose packets go to the kernel
// path's rules while no sllbrd holds the program) and --on-exit keep, sllbrd is restarted twice while bounded UDP floods (IPv4
// and IPv6) run through it: first killed with SIGKILL (a crash, the OOM
// killer), then stopped with SIGTERM (an upgrade). The kernel keeps
// forwarding meanwhile and every new instance adopts what it finds (an
// endpoint that left and came back holds a mark a fresh start would not
// give it): no packet of the floods is lost, the table is left exactly as
// it was (same rules, sets and elements, same handles), and no flow moves.
func TestIntegrationRestartLosesNoFastPathPacket(t *testing.T) {
	for _, mode := range []string{dataplaneKernel, dataplaneBPF, labBPFXDP} {
		t.Run(mode, func(t *testing.T) { testIntegrationRestartLosesNoFastPathPacket(t, mode) })
	}
}

func testIntegrationRestartLosesNoFastPathPacket(t *testing.T, mode string) {
	require.Lab(t)
	l := dataplaneLab(t, 1, mode)
	port := l.Options().BlastPort
	routes := append([]e2e.Route{{Name: "flood", Service: "service-a", Priority: 20,
		Fields: fmt.Sprintf(`protocols: [UDP], destinationPorts: ["%d"]`, port)}}, webRoute...)
	dir := t.TempDir()
	if err := e2e.WriteManifests(dir, allTargets, routes); err != nil {
		t.Fatal(err)
	}
	start := func() *e2e.Instance {
		t.Helper()
		inst, err := e2e.Start(l, lab.LBName(1), sllbrdBinary, dir, dataplaneArgs(l, "--queues", "2", "--on-exit", "keep")...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { logTail(t, inst) })
		waitGeneration(t, inst, 1)
		return inst
	}
	inst := start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := l.RouteVIPsVia(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// t1 leaves and, once its mark is released, comes back with another
	// one: a fresh start would number the marks differently, so only
	// adopting the running instance's marks leaves the table as it is.
	if err := e2e.WriteManifests(dir, []e2e.Service{{Name: "service-a", Targets: []int{2, 3}, IDs: map[int]int{2: 1, 3: 2}}}, routes); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, inst, 2)
	waitFor(t, 30*time.Second, "the removed endpoint's fwmark rules deleted", func() bool { return markRules(t, l, lab.LBName(1)) == 2*2 })
	if err := e2e.WriteManifests(dir, allTargets, routes); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, inst, 3)
	opts := []lab.FlowOptions{{VIP: vip4, Port: 5001, Count: 100, SrcPortBase: 36000}, {VIP: vip6, Port: 5001, Count: 100, SrcPortBase: 36000}}
	var before []map[lab.Flow]string
	for _, o := range opts {
		before = append(before, flows(t, l, o))
	}
	table := listOurTable(t, ctx, l)
	receivedBefore, err := l.BlastReceived(ctx)
	if err != nil {
		t.Fatal(err)
	}

	stopFloods := startFloods(t, ctx, l, lab.BlastOptions{Rate: 2000, Flows: 256, Duration: 60 * time.Second})
	defer stopFloods()
	time.Sleep(time.Second) // the floods run before the first restart

	for _, restart := range []struct {
		name string
		stop func(*e2e.Instance) error
	}{
		{"SIGKILL", func(i *e2e.Instance) error { return i.Proc.Kill() }},
		{"SIGTERM with --on-exit keep", func(i *e2e.Instance) error { return i.Proc.Terminate(15 * time.Second) }},
	} {
		if err := restart.stop(inst); err != nil {
			t.Fatal(err)
		}
		if got := listOurTable(t, ctx, l); got != table {
			t.Errorf("%s: the table changed when sllbrd stopped:\nbefore %s\nafter  %s", restart.name, table, got)
		}
		time.Sleep(500 * time.Millisecond) // the floods run without sllbrd
		inst = start()
		if got := listOurTable(t, ctx, l); got != table {
			t.Errorf("%s: the restarted sllbrd rewrote the table:\nbefore %s\nafter  %s", restart.name, table, got)
		}
		for i, o := range opts {
			if after := flows(t, l, o); !maps.Equal(before[i], after) {
				t.Errorf("%s: %d of %d %v flows reached another target after the restart", restart.name, differing(before[i], after), len(after), o.VIP)
			}
		}
	}
	time.Sleep(time.Second)
	results := stopFloods()
	receivedAfter, err := l.BlastReceived(ctx)
	if err != nil || t.Failed() {
		t.Fatalf("after the floods: %v", err)
	}
	var sent, received uint64
	for _, r := range results {
		sent += r.Sent
	}
	for target, n := range receivedAfter {
		received += n - receivedBefore[target]
	}
	t.Logf("floods (IPv4, IPv6): sent %d + %d packets, the targets received %d", results[0].Sent, results[1].Sent, received)
	if results[0].Sent == 0 || results[1].Sent == 0 || received != sent {
		t.Errorf("the floods sent %d packets and the targets received %d: the restarts lost %d", sent, received, int64(sent)-int64(received))
	}
	if mode != dataplaneKernel {
		checkBPFPath(t, l, []*e2e.Instance{inst})
	}
}

// listOurTable lists sllbrd's table in lb1 with rule and object handles and
// without counter values: equal listings mean nothing was rewritten.
func listOurTable(t *testing.T, ctx context.Context, l *lab.Lab) string {
	t.Helper()
	out, err := l.Exec(ctx, lab.LBName(1), "nft", "-a", "-s", "list", "table", "inet", "sllbrd")
	if err != nil {
		t.Fatalf("list table: %v: %s", err, out)
	}
	return out
}
