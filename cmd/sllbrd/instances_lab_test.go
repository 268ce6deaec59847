package main

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// TestIntegrationTwoInstancesAgree: two sllbrd fed the same manifests send
// every flow to the same target, without sharing any state.
func TestIntegrationTwoInstancesAgree(t *testing.T) {
	forEachDataplane(t, testIntegrationTwoInstancesAgree)
}

func testIntegrationTwoInstancesAgree(t *testing.T, mode string) {
	l := dataplaneLab(t, 2, mode)
	_, insts := startSllbrd(t, l, allTargets, webRoute, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, vip := range []netip.Addr{vip4, vip6} {
		for _, proto := range []string{"udp", "tcp"} {
			o := lab.FlowOptions{VIP: vip, Proto: proto, Port: 80, Count: 200, SrcPortBase: 33000}
			if err := l.RouteVIPsVia(ctx, 1); err != nil {
				t.Fatal(err)
			}
			via1 := flows(t, l, o)
			before, _, _ := insts[1].Metric(`sllbrd_packets_total{reason="balanced"}`)
			if err := l.RouteVIPsVia(ctx, 2); err != nil {
				t.Fatal(err)
			}
			via2 := flows(t, l, o)
			after, _, _ := insts[1].Metric(`sllbrd_packets_total{reason="balanced"}`)
			if after-before < 200 {
				t.Fatalf("%s %v: lb2 balanced %v packets; the flows did not go through it", proto, vip, after-before)
			}
			if n := differing(via1, via2); n != 0 {
				t.Errorf("%s %v: %d of %d flows reached another target through lb2 than through lb1", proto, vip, n, len(via1))
			}
		}
	}
}
