package lab

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// TestIntegrationGatewayOnlyTrunk builds a gateway-only lab and trunks its
// gateway network to a bridge of the test's namespace, where a namespace of
// the test's own (standing in for a pod) is attached: it reaches the
// gateway over both families, and the trunk goes with the lab.
func TestIntegrationGatewayOnlyTrunk(t *testing.T) {
	l := newTestLab(t, Options{GatewayOnly: true})
	ctx := context.Background()
	if n := len(l.LBs()) + len(l.Targets()); n != 0 {
		t.Fatalf("gateway-only lab has %d LBs and targets", n)
	}
	br, port := "sl-tb-"+l.RunID(), "sl-tp-"+l.RunID()
	pod := "sllbrd-trunkpod-" + l.RunID()
	t.Cleanup(func() {
		_ = deleteNetns(context.Background(), pod)
		_ = DisconnectHost(context.Background(), br)
	})
	for _, s := range [][]string{
		{"ip", "link", "add", br, "type", "bridge", "mcast_snooping", "0"},
		{"ip", "link", "set", br, "up"},
		{"ip", "netns", "add", pod},
		{"ip", "link", "add", "sl-pp-" + l.RunID(), "type", "veth", "peer", "name", "vlan-100", "netns", pod},
		{"ip", "link", "set", "sl-pp-" + l.RunID(), "master", br, "up"},
		{"ip", "-n", pod, "link", "set", "vlan-100", "up"},
		{"ip", "-n", pod, "addr", "add", "169.254.100.7/24", "dev", "vlan-100"},
		{"ip", "-n", pod, "addr", "add", "fd00:169::7/64", "dev", "vlan-100", "nodad"},
	} {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Trunk(ctx, TargetLink+"x", br, port); err == nil {
		t.Errorf("Trunk of an unknown bridge succeeded")
	}
	if err := l.Trunk(ctx, GatewayLink, br, port); err != nil {
		t.Fatal(err)
	}
	// Nothing listens on the gateway's port 9: a refused connection is the
	// gateway's answer.
	for _, a := range []netip.Addr{GatewayAddrs().V4.Addr(), GatewayAddrs().V6.Addr()} {
		err := InNetns(pod, func() error {
			c, err := net.DialTimeout("tcp", netip.AddrPortFrom(a, 9).String(), 3*time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("connect to %v over the trunk: %v, want connection refused", a, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The kernel removes a dead namespace's links a little later.
	deadline := time.Now().Add(10 * time.Second)
	for _, err := net.InterfaceByName(port); err == nil; _, err = net.InterfaceByName(port) {
		if time.Now().After(deadline) {
			t.Fatalf("the trunk's host end %s outlived the lab by 10 s", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
