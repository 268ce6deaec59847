package main

import (
	"bytes"
	"maps"
	"net/netip"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// TestIntegrationFragmentedDatagramsArriveWhole: a 3000-byte UDP datagram
// leaves the client as fragments; every fragment reaches the same target
// (which reassembles and answers), the one a small datagram of the same
// flow reaches.
func TestIntegrationFragmentedDatagramsArriveWhole(t *testing.T) {
	forEachDataplane(t, testIntegrationFragmentedDatagramsArriveWhole)
}

func testIntegrationFragmentedDatagramsArriveWhole(t *testing.T, mode string) {
	l := dataplaneLab(t, 1, mode)
	_, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	for _, vip := range []netip.Addr{vip4, vip6} {
		small := flows(t, l, lab.FlowOptions{VIP: vip, Port: 5003, Count: 40, SrcPortBase: 32000})
		big := flows(t, l, lab.FlowOptions{VIP: vip, Port: 5003, Count: 40, SrcPortBase: 32000,
			Payload: bytes.Repeat([]byte("x"), 3000)})
		if !maps.Equal(small, big) {
			t.Errorf("%v: fragmented datagrams reached other targets than small ones: %d of 40 differ", vip, differing(small, big))
		}
		if len(lab.Distribution(big)) < 2 {
			t.Errorf("%v: fragmented flows all reached one target: %v", vip, lab.Distribution(big))
		}
	}
	followed, _, err := insts[0].Metric(`sllbrd_packets_total{reason="fragment_followed"}`)
	if err != nil || followed < 80 {
		t.Errorf("later fragments that followed their first: %v (err %v), want >= 80", followed, err)
	}
}
