package route

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func ep(mark uint32, via, dev string) EndpointRoute {
	return EndpointRoute{Mark: mark, Table: mark, Via: netip.MustParseAddr(via), Interface: dev}
}

func gw(addr, dev string) Nexthop { return Nexthop{Addr: netip.MustParseAddr(addr), Interface: dev} }

func sorted(s ...string) []string { slices.Sort(s); return s }

func TestReconcileDesiredState(t *testing.T) {
	tests := []struct {
		name       string
		eps        []EndpointRoute
		paths      []ReturnPath
		wantRules  []string
		wantRoutes []string
	}{
		{
			name: "endpoints of both families",
			eps:  []EndpointRoute{ep(10001, "10.0.0.2", "eth1"), ep(10002, "fd00::2", "eth1")},
			wantRules: sorted("rule v4 pref 10000 fwmark 10001 lookup 10001",
				"rule v6 pref 10000 fwmark 10002 lookup 10002"),
			wantRoutes: sorted("route v4 table 10001 default metric 100 via 10.0.0.2 ifindex 3",
				"route v4 table 10001 default metric 1000000 blackhole",
				"route v6 table 10002 default metric 100 via fd00::2 ifindex 3",
				"route v6 table 10002 default metric 1000000 blackhole"),
		},
		{
			name: "return path ECMP v4, single v6",
			paths: []ReturnPath{{VIPs: addrs("20.0.0.1", "2000::1"), Table: 10500,
				Gateways: []Nexthop{gw("10.9.0.2", "eth2"), gw("10.9.0.1", "eth2"), gw("fd09::1", "eth2"), gw("10.9.0.1", "eth2")}}},
			wantRules: sorted("rule v4 pref 10001 from 20.0.0.1/32 lookup 10500",
				"rule v6 pref 10001 from 2000::1/128 lookup 10500"),
			wantRoutes: sorted("route v4 table 10500 default metric 100 via 10.9.0.1 ifindex 4 via 10.9.0.2 ifindex 4",
				"route v4 table 10500 default metric 1000000 blackhole",
				"route v6 table 10500 default metric 100 via fd09::1 ifindex 4",
				"route v6 table 10500 default metric 1000000 blackhole"),
		},
		{
			name:       "return path without gateways is a blackhole",
			paths:      []ReturnPath{{VIPs: addrs("20.0.0.1"), Table: 10500}},
			wantRules:  []string{"rule v4 pref 10001 from 20.0.0.1/32 lookup 10500"},
			wantRoutes: []string{"route v4 table 10500 default metric 1000000 blackhole"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newFakeKernel()
			rc, err := New(k)
			if err != nil {
				t.Fatal(err)
			}
			if err := rc.Reconcile(tt.eps, tt.paths); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if got := k.ruleStrings(); !slices.Equal(got, tt.wantRules) {
				t.Errorf("rules\n got  %q\n want %q", got, tt.wantRules)
			}
			if got := k.routeStrings(); !slices.Equal(got, tt.wantRoutes) {
				t.Errorf("routes\n got  %q\n want %q", got, tt.wantRoutes)
			}
			k.ops = nil
			if err := rc.Reconcile(tt.eps, tt.paths); err != nil || len(k.ops) != 0 {
				t.Errorf("second Reconcile: err %v, ops %q; want no change", err, k.ops)
			}
		})
	}
}

func TestReconcileOwnership(t *testing.T) {
	k := newFakeKernel()
	foreign := []Rule{
		{Family: IPv4, Priority: 0, Table: 255},
		{Family: IPv4, Priority: 500, Mark: 10001, Table: 10001}, // priority not ours
		{Family: IPv4, Priority: 10000, Mark: 7, Table: 100},     // table not ours
		{Family: IPv6, Priority: 32766, Table: 254},
	}
	stale := Rule{Family: IPv4, Priority: 10000, Mark: 10999, Table: 10999}
	k.rules = append(slices.Clone(foreign), stale)
	foreignRoute := Route{Family: IPv4, Table: 254, Hops: []Hop{{netip.MustParseAddr("10.0.0.9"), 3}}}
	staleRoute := Route{Family: IPv6, Table: 10999, Metric: 5, Blackhole: true}
	k.routes = []Route{foreignRoute, staleRoute}
	rc, _ := New(k)
	if err := rc.Reconcile([]EndpointRoute{ep(10001, "10.0.0.2", "eth1")}, nil); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(foreign), Rule{Family: IPv4, Priority: 10000, Mark: 10001, Table: 10001})
	if !slices.Equal(k.rules, want) {
		t.Errorf("rules = %v, want %v", k.rules, want)
	}
	if len(k.routes) != 3 || !k.routes[0].equal(foreignRoute) || k.routes[1].Table != 10001 || k.routes[2].Table != 10001 {
		t.Errorf("routes = %v", k.routes)
	}
}

func TestReconcilePartialFailure(t *testing.T) {
	k := newFakeKernel()
	k.fail = func(op string) error {
		if strings.Contains(op, "table 10002") {
			return errors.New("EPERM")
		}
		return nil
	}
	rc, _ := New(k)
	err := rc.Reconcile([]EndpointRoute{
		ep(10001, "10.0.0.2", "eth1"),
		ep(10002, "10.0.0.3", "eth1"),    // kernel refuses its route
		ep(10003, "10.0.0.4", "nosuch0"), // unknown interface
		ep(20003, "10.0.0.5", "eth1"),    // mark and table out of range
		{Mark: 10001, Table: 10004, Via: netip.MustParseAddr("10.0.0.6"), Interface: "eth1"}, // mark reused
		ep(10005, "10.0.0.7", "eth1"),
	}, nil)
	if err == nil {
		t.Fatal("Reconcile succeeded despite failures")
	}
	for _, want := range []string{"table 10002", "nosuch0", "mark 20003", "mark 10001 table 10004"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error does not wrap ErrInvalid: %v", err)
	}
	want := sorted("rule v4 pref 10000 fwmark 10001 lookup 10001", "rule v4 pref 10000 fwmark 10002 lookup 10002",
		"rule v4 pref 10000 fwmark 10005 lookup 10005")
	if got := k.ruleStrings(); !slices.Equal(got, want) {
		t.Errorf("rules applied despite failures\n got  %q\n want %q", got, want)
	}
	if got := len(k.routes); got != 4 {
		t.Errorf("%d routes, want 4 (10001, 10005: gateway and blackhole)", got)
	}
}

func TestReconcileFlushesOldNeighbour(t *testing.T) {
	k := newFakeKernel()
	rc, _ := New(k)
	path := []ReturnPath{{VIPs: addrs("20.0.0.1"), Table: 10500, Gateways: []Nexthop{gw("10.9.0.1", "eth2")}}}
	if err := rc.Reconcile([]EndpointRoute{ep(10001, "10.0.0.2", "eth1")}, path); err != nil {
		t.Fatal(err)
	}
	path[0].Gateways = []Nexthop{gw("10.9.0.2", "eth2")}
	if err := rc.Reconcile([]EndpointRoute{ep(10001, "10.0.0.3", "eth1")}, path); err != nil {
		t.Fatal(err)
	}
	if want := []string{"3/10.0.0.2"}; !slices.Equal(k.neighs, want) {
		t.Errorf("flushed neighbours %q, want %q (endpoint's old IP only)", k.neighs, want)
	}
}

func TestNewValidatesRanges(t *testing.T) {
	for _, r := range []Ranges{
		{Marks: Range{0, 10}, Tables: Range{1000, 2000}, Priorities: Range{100, 200}},
		{Marks: Range{1, 10}, Tables: Range{200, 300}, Priorities: Range{100, 200}},
		{Marks: Range{1, 10}, Tables: Range{1000, 2000}, Priorities: Range{100, 100}},
		{Marks: Range{1, 10}, Tables: Range{1000, 2000}, Priorities: Range{100, 40000}},
	} {
		if _, err := New(newFakeKernel(), WithRanges(r)); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", r, err)
		}
	}
	if _, err := New(newFakeKernel(), WithRanges(Ranges{Marks: Range{1, 10}, Tables: Range{1000, 2000},
		Priorities: Range{100, 101}})); err != nil {
		t.Errorf("valid ranges rejected: %v", err)
	}
}
