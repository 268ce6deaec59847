package lab

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestIntegrationBlastFromGatewayPointToPoint: in a point-to-point lab the
// gateway's and lb1's vlan-100, and lb1's and t1's net1, are each other's
// veth peers (no bridge); a blast from the gateway's packet socket, forwarded
// by lb1's plain routes, arrives whole at t1's XDP sink, both families, and
// the blast counts it; the gateway forwards none of it. A sink at lb1
// takes it all while it is there.
func TestIntegrationBlastFromGatewayPointToPoint(t *testing.T) {
	l := newTestLab(t, Options{PointToPoint: true, NoResponders: true})
	ctx := context.Background()
	for _, end := range []struct{ node, ifname, peerNode string }{
		{GatewayNode, GatewayLink, LBName(1)}, {LBName(1), GatewayLink, GatewayNode}, {LBName(1), TargetLink, TargetName(1)}} {
		out, err := l.Exec(ctx, end.node, "ip", "-d", "link", "show", end.ifname)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "veth") || !strings.Contains(out, "link-netns "+l.NS(end.peerNode)) || strings.Contains(out, "master") {
			t.Errorf("%s %s is not a veth whose peer is in %s, outside any bridge:\n%s", end.node, end.ifname, end.peerNode, out)
		}
	}
	if err := l.Baseline(ctx, BaselineOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.InstallXDPSink(TargetName(1), TargetLink); err != nil {
		t.Fatal(err)
	}
	forwarded := func() string { // the gateway's forwarded datagrams, both families
		out, _ := l.Exec(ctx, GatewayNode, "sh", "-c", "awk '/^Ip: [0-9]/ {print \"ForwDatagrams\", $7}' /proc/net/snmp; grep Ip6OutForwDatagrams /proc/net/snmp6")
		return out
	}
	gw0 := forwarded()
	const n = 3000
	for _, fam := range families {
		res, err := l.Blast(ctx, BlastOptions{VIP: fam.vip, Count: n, Rate: 30000, Duration: 2 * time.Second, FromGateway: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s from the gateway's packet socket: %v", fam.name, res)
		// The budget is checked per batch of 64: at most a batch more.
		if res.Sent < n || res.Sent >= n+64 || res.Received != res.Sent || res.PerTarget[TargetName(1)] != res.Sent {
			t.Errorf("%s: sent %d, received %d (%v), want %d (up to a batch more), all at t1", fam.name, res.Sent, res.Received, res.PerTarget, n)
		}
	}
	if gw1 := forwarded(); gw1 != gw0 {
		t.Errorf("the gateway forwarded some of the blast: before\n%s\nafter\n%s", gw0, gw1)
	}
	// A sink on lb1's side counts there, and once closed counts no more.
	sink, err := l.InstallXDPSink(LBName(1), GatewayLink)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Blast(ctx, BlastOptions{VIP: families[0].vip, Count: n, Rate: 30000, Duration: 2 * time.Second, FromGateway: true})
	if err != nil || res.Received != res.Sent || res.PerTarget[LBName(1)] != res.Sent || res.PerTarget[TargetName(1)] != 0 {
		t.Errorf("with a sink at lb1: %v, %v; want all of it dropped there", res, err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	res, err = l.Blast(ctx, BlastOptions{VIP: families[0].vip, Count: n, Rate: 30000, Duration: 2 * time.Second, FromGateway: true})
	if err != nil || res.Received != res.Sent || res.PerTarget[TargetName(1)] != res.Sent || res.PerTarget[LBName(1)] != 0 {
		t.Errorf("after lb1's sink closed: %v, %v; want all of it at t1", res, err)
	}
}
