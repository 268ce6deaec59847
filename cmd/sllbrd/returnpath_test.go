package main

import (
	"net/netip"
	"testing"

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
