package lab

import (
	"context"
	"maps"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// newTestLab builds a lab for an integration test, or skips the test when
// not root or in -short mode. Cleanup closes the lab and checks that no
// namespace of the run is left.
func newTestLab(t testing.TB, o Options) *Lab {
	t.Helper()
	require.Lab(t)
	o.Logger = t
	l, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		assertNoNamespaces(t, l.RunID())
	})
	return l
}

func assertNoNamespaces(t testing.TB, runID string) {
	t.Helper()
	left, err := ListNetns(NSPrefix + runID + "-")
	if err != nil || len(left) > 0 {
		t.Errorf("namespaces of run %s left: %v %v", runID, left, err)
	}
}

var families = []struct {
	name string
	vip  netip.Addr
}{{"ipv4", DefaultVIPs[0]}, {"ipv6", DefaultVIPs[2]}}

func TestIntegrationBaselineFlows(t *testing.T) {
	l := newTestLab(t, Options{LBs: 1, Targets: 3})
	ctx := context.Background()
	if err := l.Baseline(ctx, BaselineOptions{ECMP: true}); err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		for _, proto := range []string{"udp", "tcp"} {
			t.Run(fam.name+"/"+proto, func(t *testing.T) {
				o := FlowOptions{VIP: fam.vip, Port: 5001, Proto: proto, Count: 30, SrcPortBase: 40000}
				first := runFlows(t, l, o)
				if d := Distribution(first); len(d) < 2 {
					t.Errorf("ECMP over 3 targets used only %v", d)
				}
				again := runFlows(t, l, o)
				if !maps.Equal(first, again) {
					t.Errorf("repeated flows moved:\nfirst %v\nagain %v", first, again)
				}
			})
		}
	}
	t.Run("single target", func(t *testing.T) {
		if err := l.Baseline(ctx, BaselineOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, fam := range families {
			served := runFlows(t, l, FlowOptions{VIP: fam.vip, Port: 80, Proto: "tcp", Count: 10})
			if d := Distribution(served); d["t1"] != 10 {
				t.Errorf("%s: without ECMP every flow must reach t1, got %v", fam.name, d)
			}
		}
	})
	t.Run("remove baseline", func(t *testing.T) {
		if err := l.RemoveBaseline(ctx); err != nil {
			t.Fatal(err)
		}
		served, err := l.Flows(ctx, FlowOptions{VIP: DefaultVIPs[0], Count: 2, Timeout: 200 * time.Millisecond, Attempts: 1})
		if err == nil || len(served) != 0 {
			t.Errorf("flows without routes: served %v, err %v; want all failed", served, err)
		}
	})
}

// runFlows runs o and requires every flow to be answered by a lab target.
func runFlows(t *testing.T, l *Lab, o FlowOptions) map[Flow]string {
	t.Helper()
	served, err := l.Flows(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(served) != o.Count {
		t.Fatalf("%d flows answered, want %d", len(served), o.Count)
	}
	targets := map[string]bool{}
	for _, name := range l.Targets() {
		targets[name] = true
	}
	for f, target := range served {
		if !targets[target] || f.Dst.Addr() != o.VIP {
			t.Fatalf("flow %s answered by %q", f, target)
		}
	}
	return served
}

// TestIntegrationTwoLBs checks the return path when targets route replies
// by ECMP over two LBs, and that a stopped responder shows as failed flows.
func TestIntegrationTwoLBs(t *testing.T) {
	l := newTestLab(t, Options{LBs: 2, Targets: 2, VIPs: []netip.Addr{DefaultVIPs[1], DefaultVIPs[3]}})
	ctx := context.Background()
	if err := l.Baseline(ctx, BaselineOptions{ECMP: true}); err != nil {
		t.Fatal(err)
	}
	for _, vip := range l.VIPs() {
		runFlows(t, l, FlowOptions{VIP: vip, Proto: "udp", Count: 20})
		runFlows(t, l, FlowOptions{VIP: vip, Proto: "tcp", Count: 20})
	}
	if err := l.Responder("t2").Stop(); err != nil {
		t.Fatal(err)
	}
	served, err := l.Flows(ctx, FlowOptions{VIP: l.VIPs()[0], Count: 20, Timeout: 200 * time.Millisecond, Attempts: 1})
	if err == nil || Distribution(served)["t2"] != 0 || len(served) == 0 {
		t.Errorf("after stopping t2: %v, err %v; want t2's flows failed, t1's answered", Distribution(served), err)
	}
}

func TestIntegrationBlast(t *testing.T) {
	l := newTestLab(t, Options{Targets: 3, NoResponders: true})
	ctx := context.Background()
	if err := l.Baseline(ctx, BaselineOptions{ECMP: true}); err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		res, err := l.Blast(ctx, BlastOptions{VIP: fam.vip, Duration: time.Second, Count: 200000})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s plain kernel forwarding: %v", fam.name, res)
		if res.Sent == 0 || res.Sent > 200000 || res.Received == 0 || res.Received > res.Sent {
			t.Errorf("%s: implausible blast result %v", fam.name, res)
		}
		for _, target := range l.Targets() {
			if res.PerTarget[target] == 0 {
				t.Errorf("%s: target %s received nothing over ECMP: %v", fam.name, target, res.PerTarget)
			}
		}
	}
}

func TestIntegrationBIRD(t *testing.T) {
	l := newTestLab(t, Options{LBs: 2, Targets: 1, NoResponders: true})
	ctx := context.Background()
	cfg := l.DefaultBIRDConfig()
	cfg.BFD = &BFDConfig{MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 5}
	b, err := l.StartBIRD(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.Birdc(ctx, "show", "protocols")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cfg.Neighbors {
		if !strings.Contains(out, BIRDProtocolName(n)+" ") || !strings.Contains(out, "BGP") {
			t.Errorf("show protocols lacks BGP %s:\n%s", BIRDProtocolName(n), out)
		}
	}
	if !strings.Contains(out, "BFD") {
		t.Errorf("show protocols lacks BFD:\n%s", out)
	}
	pid := b.Process.PID
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProcStats(pid); err == nil {
		t.Errorf("bird pid %d still exists after Stop", pid)
	}
}

// TestIntegrationFailedBuildCleansUp makes New fail after the namespaces
// exist (no responder binary) and checks nothing is left.
func TestIntegrationFailedBuildCleansUp(t *testing.T) {
	require.Root(t)
	runID := randomRunID()
	l, err := New(context.Background(), Options{Targets: 1, RunID: runID, ResponderBinary: "/nonexistent/labresponder", Logger: t})
	if err == nil {
		l.Close()
		t.Fatal("New with a missing responder binary succeeded")
	}
	assertNoNamespaces(t, runID)
}

// BenchmarkIntegrationBaselineForwarding measures plain kernel forwarding
// client -> gw -> lb1 -> 3 targets (ECMP) with 64-byte UDP frames (66 for
// IPv6); one op is one packet sent. recv-pps is what the targets counted.
// The lab is built once; the sub-benchmarks blast b.N packets.
func BenchmarkIntegrationBaselineForwarding(b *testing.B) {
	l := newTestLab(b, Options{Targets: 3, NoResponders: true})
	if err := l.Baseline(context.Background(), BaselineOptions{ECMP: true}); err != nil {
		b.Fatal(err)
	}
	for _, fam := range families {
		b.Run(fam.name, func(b *testing.B) {
			b.ResetTimer()
			res, err := l.Blast(context.Background(), BlastOptions{VIP: fam.vip, Count: uint64(b.N), Duration: 30 * time.Second})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(res.SentPPS(), "sent-pps")
			b.ReportMetric(res.ReceivedPPS(), "recv-pps")
			b.ReportMetric(100*res.Loss(), "loss-%")
		})
	}
}
