package main

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/model"
)

func TestReturnPathLatch(t *testing.T) {
	r4 := model.Router{Address: netip.MustParseAddr("169.254.100.150")}
	r6 := model.Router{Address: netip.MustParseAddr("fd00:169::150")}
	g4 := route.Nexthop{Addr: r4.Address, Interface: "vlan-100"}
	g6 := route.Nexthop{Addr: r6.Address, Interface: "vlan-100"}
	steps := []struct {
		routers  []model.Router
		gateways []route.Nexthop
		ready    bool
	}{
		{[]model.Router{r4, r6}, nil, false},                 // BFD and BGP coming up
		{[]model.Router{r4, r6}, []route.Nexthop{g6}, false}, // one family only
		{[]model.Router{r4, r6}, []route.Nexthop{g4, g6}, true},
		{[]model.Router{r4, r6}, nil, true}, // every gateway lost later: still ready
	}
	var l returnPathLatch
	for i, s := range steps {
		l.observe(s.routers, s.gateways)
		if ok, why := l.ready(); ok != s.ready || (why == "") != s.ready {
			t.Errorf("step %d: ready %v (%q), want %v", i, ok, why, s.ready)
		}
	}
	var none returnPathLatch
	if none.observe(nil, nil); !none.done.Load() {
		t.Errorf("no GatewayRouter: not ready, want ready (nothing to wait for)")
	}
	var v4 returnPathLatch
	if v4.observe([]model.Router{r4}, []route.Nexthop{g4}); !v4.done.Load() {
		t.Errorf("IPv4 routers with an IPv4 gateway: not ready")
	}
}

// TestAdoptedPathStandsInUntilTheSessionsAreUp: a previous run's gateways
// stand in for a family until this run has a gateway of it (then never
// again, even if that one goes) or the hold ends.
func TestAdoptedPathStandsInUntilTheSessionsAreUp(t *testing.T) {
	old4 := route.Nexthop{Addr: netip.MustParseAddr("169.254.100.150"), Interface: "vlan-100"}
	old6 := route.Nexthop{Addr: netip.MustParseAddr("fd00:169::150"), Interface: "vlan-100"}
	new4 := route.Nexthop{Addr: netip.MustParseAddr("169.254.100.151"), Interface: "vlan-100"}
	start := time.Now()
	p := newAdoptedPath([]route.Nexthop{old4, old6}, start)
	steps := []struct {
		what  string
		after time.Duration
		live  []route.Nexthop
		want  []route.Nexthop
	}{
		{"restarted, no session up", 0, nil, []route.Nexthop{old4, old6}},
		{"IPv4 up", time.Second, []route.Nexthop{new4}, []route.Nexthop{new4, old6}},
		{"IPv4 down again: released, not adopted back", 2 * time.Second, nil, []route.Nexthop{old6}},
		{"the hold ends", adoptHold, nil, nil},
	}
	for _, s := range steps {
		live := slices.Clone(s.live)
		if got := p.merge(live, start.Add(s.after)); !slices.Equal(got, s.want) {
			t.Errorf("%s: %v, want %v", s.what, got, s.want)
		}
		if !slices.Equal(live, s.live) {
			t.Errorf("%s: merge changed the live gateways: %v", s.what, live)
		}
	}
}
