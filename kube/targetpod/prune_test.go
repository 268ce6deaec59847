package targetpod

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// lastApplied returns the Desired of the fake's last apply.
func (f *fakeConfigurer) lastApplied() targetnet.Desired {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applies[len(f.applies)-1]
}

// gatewayStatus returns the status of Gateway name in status value v.
func gatewayStatus(t *testing.T, v, name string) (Status, GatewayStatus) {
	t.Helper()
	s, err := ParseStatus(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range s.Gateways {
		if g.Name == name {
			return s, g
		}
	}
	return s, GatewayStatus{}
}

func addrList(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// TestPodAgentLeavesOutNextHopsFoundDown: the next hops the liveness finds
// down are marked down for the loop, on the Gateways with liveness only,
// and the same generation is applied again each time the set changes (not
// when it is signalled unchanged); the status lists them apart from the
// next hops in the kernel and the pod stays ready; they keep their BFD
// sessions; every next hop down keeps them all, said in the status.
func TestPodAgentLeavesOutNextHopsFoundDown(t *testing.T) {
	c, rec, live := &fakeConfigurer{}, &statusRecorder{}, &livenessRecorder{}
	a := startLiveAgent(t, c, rec, live)
	a.Seen(podOf("", desiredLiveness(1, &GatewayLiveness{IntervalMilliseconds: 100, Multiplier: 3}), ""))
	eventually(t, "applied and ready", func() bool { return readyBy(rec.last(), NodeAgent("n1")) && live.count() == 1 })

	// .2 of sllb-a down; .3 is sllb-b's, which has no liveness: kept.
	n := c.count()
	live.setDown("169.111.100.2", "169.111.100.3")
	eventually(t, "applied again with .2 down", func() bool {
		_, g := gatewayStatus(t, rec.last(), "sllb-a")
		return g.DownNextHops != nil
	})
	if got := c.count() - n; got != 1 {
		t.Errorf("%d applies for one change of the next hops down, want 1", got)
	}
	d := c.lastApplied()
	if !slices.Equal(d.Gateways[0].Down, addrList("169.111.100.2")) || d.Gateways[1].Down != nil {
		t.Errorf("applied %+v: want .2 down on sllb-a only", d.Gateways)
	}
	s, g := gatewayStatus(t, rec.last(), "sllb-a")
	if !s.Ready || s.ObservedGeneration != 1 || !slices.Equal(g.NextHops.IPv4, addrList("169.111.100.1")) ||
		!reflect.DeepEqual(g.DownNextHops, &NextHops{IPv4: addrList("169.111.100.2")}) || len(g.AllNextHopsDown) != 0 {
		t.Errorf("status %s: want generation 1 ready, .1 in the kernel, .2 down", rec.last())
	}
	if _, b := gatewayStatus(t, rec.last(), "sllb-b"); !slices.Equal(b.NextHops.IPv4, addrList("169.111.100.3")) || b.DownNextHops != nil {
		t.Errorf("sllb-b %+v: want .3 kept (no liveness)", b)
	}
	eventually(t, "the sessions told", func() bool {
		gw := live.last()
		return len(gw) == 1 && slices.Equal(gw[0].NextHops, addrList("169.111.100.1")) && slices.Equal(gw[0].Down, addrList("169.111.100.2"))
	})

	// Signalled with the same next hops of sllb-a down: nothing applied.
	n = c.count()
	live.setDown("169.111.100.2")
	live.setDown("169.111.100.2", "169.111.100.9")
	time.Sleep(100 * time.Millisecond)
	if got := c.count() - n; got != 0 {
		t.Errorf("%d applies with the same next hops down, want none", got)
	}

	// Every next hop of sllb-a down: all kept, said in the status.
	live.setDown("169.111.100.1", "169.111.100.2")
	eventually(t, "all down", func() bool {
		_, g := gatewayStatus(t, rec.last(), "sllb-a")
		return len(g.AllNextHopsDown) == 1
	})
	s, g = gatewayStatus(t, rec.last(), "sllb-a")
	if !s.Ready || len(g.NextHops.IPv4) != 2 || g.DownNextHops != nil || g.AllNextHopsDown[0] != "ipv4" {
		t.Errorf("status %s: want both next hops kept, ipv4 all down, ready", rec.last())
	}

	// Up again: back.
	live.setDown()
	eventually(t, "back", func() bool {
		_, g := gatewayStatus(t, rec.last(), "sllb-a")
		return len(g.NextHops.IPv4) == 2 && len(g.AllNextHopsDown) == 0
	})
}

// TestPodAgentCoalescesReapplies: changes of the next hops down while an
// apply runs are applied once after it, the latest; the agent hands the
// loop nothing it has not changed.
func TestPodAgentCoalescesReapplies(t *testing.T) {
	c, rec, live := &fakeConfigurer{}, &statusRecorder{}, &livenessRecorder{}
	a := startLiveAgent(t, c, rec, live)
	a.Seen(podOf("", desiredLiveness(1, &GatewayLiveness{IntervalMilliseconds: 100, Multiplier: 3}), ""))
	eventually(t, "applied", func() bool { return readyBy(rec.last(), NodeAgent("n1")) })

	gate := make(chan struct{})
	c.set(nil, gate)
	n := c.count()
	live.setDown("169.111.100.1")
	time.Sleep(50 * time.Millisecond) // the loop takes it and waits at the gate
	for _, down := range [][]string{{"169.111.100.1", "169.111.100.2"}, {}, {"169.111.100.2"}} {
		live.setDown(down...)
		time.Sleep(20 * time.Millisecond)
	}
	gate <- struct{}{}
	close(gate) // and any after it
	eventually(t, "two applies", func() bool { return c.count() >= n+2 })
	time.Sleep(100 * time.Millisecond)
	if got := c.count() - n; got != 2 {
		t.Errorf("%d applies for 4 changes during one apply, want 2 (the one running, then the latest)", got)
	}
	if d := c.lastApplied(); !slices.Equal(d.Gateways[0].Down, addrList("169.111.100.2")) {
		t.Errorf("last applied %+v, want .2 down (the latest)", d.Gateways[0])
	}
}
