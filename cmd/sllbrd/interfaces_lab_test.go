package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// TestIntegrationInterfaceCreatedAgain: lb1's target interface (net1) and
// its router interface (vlan-100) are deleted and created again with their
// addresses, as a secondary network attached again (with the same MACs and
// the lab's own default routes, so that only sllbrd has anything to catch
// up with). The kernel deleted the
// policy routes with the old links; every flow to both VIPs is answered
// again within 3 s, long before the periodic resync, because the interface
// watch applies at once. With the eBPF datapath the program is attached to
// the new vlan-100 and forwards those flows itself again.
func TestIntegrationInterfaceCreatedAgain(t *testing.T) {
	forEachDataplane(t, func(t *testing.T, mode string) {
		l := dataplaneLab(t, 1, mode)
		_, insts := startSllbrd(t, l, allTargets, webRoute, 1)
		const n = 30
		// answered runs n flows per VIP, one try each, all at once, and
		// counts the answered ones.
		answered := func(base uint16) int {
			got := 0
			for _, vip := range []netip.Addr{vip4, vip6} {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				served, _ := l.Flows(ctx, lab.FlowOptions{VIP: vip, Port: 5001, Count: n, SrcPortBase: base,
					Timeout: 300 * time.Millisecond, Attempts: 1, Parallel: n})
				cancel()
				got += len(served)
			}
			return got
		}
		if got := answered(41000); got != 2*n {
			t.Fatalf("before: %d of %d flows answered", got, 2*n)
		}
		before := forwardedByBPF(t, insts[0])
		t.Cleanup(func() {
			if !t.Failed() {
				return
			}
			for _, c := range [][]string{{"ip", "rule"}, {"ip", "route", "show", "table", "all"}, {"ip", "-6", "route", "show", "table", "all"}, {"ip", "neigh"}, {"ip", "-s", "link"}} {
				out, err := l.Exec(context.Background(), lab.LBName(1), c...)
				t.Logf("lb1: %s (%v):\n%s", strings.Join(c, " "), err, out)
			}
		})
		for _, link := range []struct{ ifname, port string }{
			{lab.TargetLink, lab.LBName(1) + "-" + lab.TargetLink}, {lab.GatewayLink, lab.LBName(1) + "-v100"}} {
			createAgain(t, l, link.ifname, link.port)
		}
		base := uint16(42000)
		took := waitFor(t, 3*time.Second, "every flow answered after lb1's interfaces were created again", func() bool {
			base += 2 * n
			return answered(base) == 2*n
		})
		t.Logf("%s: every flow answered %v after the interfaces were created again", mode, took.Round(time.Millisecond))
		if mode == dataplaneBPF || mode == labBPFXDP {
			if got := answered(50000); got != 2*n {
				t.Errorf("after: %d of %d flows answered", got, 2*n)
			}
			if after := forwardedByBPF(t, insts[0]); after-before < 2*n {
				t.Errorf("the eBPF program forwarded %v packets itself since the interfaces were created again, want at least %d", after-before, 2*n)
			}
		}
	})
}

// createAgain deletes lb1's interface ifname (a veth whose other end, port,
// is on the switch's bridge of the same name) and creates it again with the
// same MAC and addresses, up, on the same bridge.
func createAgain(t *testing.T, l *lab.Lab, ifname, port string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lb := lab.LBName(1)
	var mac net.HardwareAddr
	if err := l.Do(lb, func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err == nil {
			mac = ifc.HardwareAddr
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	addrs := lab.LBTargetSide(1)
	if ifname == lab.GatewayLink {
		addrs = lab.LBGatewaySide(1)
	}
	type step struct {
		node string
		args []string
	}
	steps := []step{
		{lab.SwitchNode, []string{"ip", "link", "del", port}},
		{lab.SwitchNode, []string{"ip", "link", "add", port, "type", "veth", "peer", "name", ifname, "address", mac.String(), "netns", l.NS(lb)}},
		{lab.SwitchNode, []string{"ip", "link", "set", port, "master", ifname, "up"}},
		{lb, []string{"ip", "link", "set", ifname, "up"}},
		{lb, []string{"ip", "addr", "add", addrs.V4.String(), "dev", ifname}},
		{lb, []string{"ip", "-6", "addr", "add", addrs.V6.String(), "dev", ifname, "nodad"}},
	}
	if ifname == lab.GatewayLink { // the lab's own default routes went with the link
		gw := lab.GatewayAddrs()
		steps = append(steps, step{lb, []string{"ip", "route", "replace", "default", "via", gw.V4.Addr().String()}},
			step{lb, []string{"ip", "-6", "route", "replace", "default", "via", gw.V6.Addr().String()}})
	}
	for _, s := range steps {
		if out, err := l.Exec(ctx, s.node, s.args...); err != nil {
			t.Fatalf("%s: %s: %v: %s", s.node, strings.Join(s.args, " "), err, out)
		}
	}
}

// forwardedByBPF is how many packets inst's eBPF program forwarded itself
// (tc and XDP); 0 without the eBPF datapath.
func forwardedByBPF(t *testing.T, inst *e2e.Instance) float64 {
	t.Helper()
	var sum float64
	for _, action := range []string{"redirect", "xdp-redirect"} {
		v, _, err := inst.Metric(fmt.Sprintf(`sllbrd_bpf_packets_total{action=%q}`, action))
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}
