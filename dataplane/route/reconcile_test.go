package route

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// reconcile runs both phases, as a caller with nothing to commit between does.
func reconcile(rc *Reconciler, eps []EndpointRoute, paths []ReturnPath) error {
	return errors.Join(rc.Add(eps, paths), rc.Prune(eps, paths))
}

func ep(mark uint32, via, dev string) EndpointRoute {
	return EndpointRoute{Mark: mark, Table: mark, Via: netip.MustParseAddr(via), Interface: dev}
}

func gw(addr, dev string) Nexthop { return Nexthop{Addr: netip.MustParseAddr(addr), Interface: dev} }

func sorted(s ...string) []string { slices.Sort(s); return s }

// catchAll and skip are the rules every Add installs with DefaultRanges.
var (
	catchAll = []string{"rule ipv4 pref 10001 fwmark 0x10000/0xffff0000 blackhole",
		"rule ipv6 pref 10001 fwmark 0x10000/0xffff0000 blackhole"}
	skip = []string{"rule ipv4 pref 9999 not fwmark 0x10000/0xffff0000 goto 10002",
		"rule ipv6 pref 9999 not fwmark 0x10000/0xffff0000 goto 10002"}
)

// withBlockRules adds the catch-all and skip rules to rules, sorted.
func withBlockRules(rules ...string) []string {
	return sorted(slices.Concat(rules, catchAll, skip)...)
}

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
			eps:  []EndpointRoute{ep(0x10001, "10.0.0.2", "eth1"), ep(0x10002, "fd00::2", "eth1")},
			wantRules: withBlockRules("rule ipv4 pref 10000 fwmark 0x10001 lookup 65537",
				"rule ipv6 pref 10000 fwmark 0x10002 lookup 65538"),
			wantRoutes: sorted("route ipv4 table 65537 default metric 100 via 10.0.0.2 ifindex 3",
				"route ipv4 table 65537 default metric 1000000 blackhole",
				"route ipv6 table 65538 default metric 100 via fd00::2 ifindex 3",
				"route ipv6 table 65538 default metric 1000000 blackhole"),
		},
		{
			name: "return path ECMP v4, single v6",
			paths: []ReturnPath{{VIPs: addrs("20.0.0.1", "2000::1"), Table: 0x10500,
				Gateways: []Nexthop{gw("10.9.0.2", "eth2"), gw("10.9.0.1", "eth2"), gw("fd09::1", "eth2"), gw("10.9.0.1", "eth2")}}},
			wantRules: withBlockRules("rule ipv4 pref 10002 from 20.0.0.1/32 lookup 66816", "rule ipv4 pref 10003 from 20.0.0.1/32 blackhole",
				"rule ipv6 pref 10002 from 2000::1/128 lookup 66816", "rule ipv6 pref 10003 from 2000::1/128 blackhole"),
			wantRoutes: sorted("route ipv4 table 66816 default metric 100 via 10.9.0.1 ifindex 4 via 10.9.0.2 ifindex 4",
				"route ipv4 table 66816 default metric 1000000 blackhole",
				"route ipv6 table 66816 default metric 100 via fd09::1 ifindex 4",
				"route ipv6 table 66816 default metric 1000000 blackhole"),
		},
		{
			name:       "return path without gateways is a blackhole",
			paths:      []ReturnPath{{VIPs: addrs("20.0.0.1"), Table: 0x10500}},
			wantRules:  withBlockRules("rule ipv4 pref 10002 from 20.0.0.1/32 lookup 66816", "rule ipv4 pref 10003 from 20.0.0.1/32 blackhole"),
			wantRoutes: []string{"route ipv4 table 66816 default metric 1000000 blackhole"},
		},
		{
			name:      "nothing desired: the catch-all alone",
			wantRules: withBlockRules(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newFakeKernel()
			rc, err := New(k)
			if err != nil {
				t.Fatal(err)
			}
			if err := reconcile(rc, tt.eps, tt.paths); err != nil {
				t.Fatalf("Add, Prune: %v", err)
			}
			if got := k.ruleStrings(); !slices.Equal(got, tt.wantRules) {
				t.Errorf("rules\n got  %q\n want %q", got, tt.wantRules)
			}
			if got := k.routeStrings(); !slices.Equal(got, tt.wantRoutes) {
				t.Errorf("routes\n got  %q\n want %q", got, tt.wantRoutes)
			}
			k.ops = nil
			if err := reconcile(rc, tt.eps, tt.paths); err != nil || len(k.ops) != 0 {
				t.Errorf("second Add, Prune: err %v, ops %q; want no change", err, k.ops)
			}
		})
	}
}

// TestAddInstallsCatchAllFirst: the catch-all blackhole rules are the first
// objects written, before any route or fwmark rule, in both families.
func TestAddInstallsCatchAllFirst(t *testing.T) {
	k := newFakeKernel()
	rc, _ := New(k)
	if err := rc.Add([]EndpointRoute{ep(0x10001, "10.0.0.2", "eth1")}, nil); err != nil {
		t.Fatal(err)
	}
	if len(k.ops) < 2 || k.ops[0] != "add "+catchAll[0] || k.ops[1] != "add "+catchAll[1] {
		t.Fatalf("first operations %q, want the catch-all rules %q", k.ops, catchAll)
	}
}

// TestAddReportsMissingCatchAll: a catch-all the kernel refuses is reported
// with ErrNoCatchAll (the caller must not queue anything new), and the rest
// is still applied.
func TestAddReportsMissingCatchAll(t *testing.T) {
	k := newFakeKernel()
	k.fail = func(op string) error {
		if strings.Contains(op, "blackhole") && strings.HasPrefix(op, "add rule") {
			return errors.New("EPERM")
		}
		return nil
	}
	rc, _ := New(k)
	err := rc.Add([]EndpointRoute{ep(0x10001, "10.0.0.2", "eth1")}, nil)
	if !errors.Is(err, ErrNoCatchAll) {
		t.Fatalf("Add = %v, want ErrNoCatchAll", err)
	}
	if got := k.ruleStrings(); !slices.Equal(got, sorted(append(slices.Clone(skip), "rule ipv4 pref 10000 fwmark 0x10001 lookup 65537")...)) {
		t.Errorf("rules %q: the endpoint's rule must still be added", got)
	}
	k.fail = nil
	if err := rc.Add([]EndpointRoute{ep(0x10001, "10.0.0.2", "eth1")}, nil); err != nil {
		t.Errorf("Add once the kernel accepts it: %v", err)
	}
}

// TestTwoPhases: Add never deletes, so the rules and routes of an endpoint
// that is no longer given stay until Prune, which only deletes (rules
// before routes) and keeps the catch-all.
func TestTwoPhases(t *testing.T) {
	k := newFakeKernel()
	rc, _ := New(k)
	old := []EndpointRoute{ep(0x10001, "10.0.0.2", "eth1"), ep(0x10002, "fd00::2", "eth1")}
	if err := reconcile(rc, old, nil); err != nil {
		t.Fatal(err)
	}
	next := []EndpointRoute{ep(0x10002, "fd00::2", "eth1"), ep(0x10003, "10.0.0.4", "eth1")}
	k.ops = nil
	if err := rc.Add(next, nil); err != nil {
		t.Fatal(err)
	}
	for _, op := range k.ops {
		if strings.HasPrefix(op, "del") {
			t.Errorf("Add deleted: %q", op)
		}
	}
	wantAll := withBlockRules("rule ipv4 pref 10000 fwmark 0x10001 lookup 65537",
		"rule ipv6 pref 10000 fwmark 0x10002 lookup 65538", "rule ipv4 pref 10000 fwmark 0x10003 lookup 65539")
	if got := k.ruleStrings(); !slices.Equal(got, wantAll) {
		t.Errorf("rules after Add\n got  %q\n want %q", got, wantAll)
	}
	if len(k.routes) != 6 {
		t.Errorf("%d routes after Add, want 6 (three tables, gateway and blackhole)", len(k.routes))
	}
	k.ops = nil
	if err := rc.Prune(next, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"del rule ipv4 pref 10000 fwmark 0x10001 lookup 65537",
		"del route ipv4 table 65537 default metric 100 via 10.0.0.2 ifindex 3",
		"del route ipv4 table 65537 default metric 1000000 blackhole"}
	if !slices.Equal(k.ops[:1], want[:1]) || !slices.Equal(sorted(k.ops[1:]...), want[1:]) {
		t.Errorf("Prune operations\n got  %q\n want %q (the rule first)", k.ops, want)
	}
	if got := k.ruleStrings(); !slices.Contains(got, catchAll[0]) || !slices.Contains(got, catchAll[1]) {
		t.Errorf("Prune removed the catch-all: %q", got)
	}
}

// TestMarkRepointedInPlace: a mark given a new gateway (its slot has a new
// endpoint) has its route replaced, never deleted and re-added, and its rule
// untouched: no instant without a route for the mark.
func TestMarkRepointedInPlace(t *testing.T) {
	k := newFakeKernel()
	rc, _ := New(k)
	if err := reconcile(rc, []EndpointRoute{ep(0x10001, "10.0.0.2", "eth1")}, nil); err != nil {
		t.Fatal(err)
	}
	k.ops = nil
	if err := reconcile(rc, []EndpointRoute{ep(0x10001, "10.0.0.3", "eth1")}, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"replace route ipv4 table 65537 default metric 100 via 10.0.0.3 ifindex 3",
		"flush neigh 10.0.0.2 ifindex 3"}
	if !slices.Equal(k.ops, want) {
		t.Errorf("operations %q, want %q", k.ops, want)
	}
}

func TestReconcileOwnership(t *testing.T) {
	k := newFakeKernel()
	foreign := []Rule{
		{Family: IPv4, Priority: 0, Table: 255},
		{Family: IPv4, Priority: 500, Mark: 0x10001, Mask: exactMask, Table: 0x10001},               // priority not ours
		{Family: IPv4, Priority: 10000, Mark: 7, Mask: exactMask, Table: 100},                       // table not ours
		{Family: IPv4, Priority: 500, Mark: 0x10000, Mask: 0xffff0000, Blackhole: true},             // blackhole, priority not ours
		{Family: IPv4, Priority: 9999, Mark: 0x5, Mask: exactMask, Table: 100},                      // the skip rule's priority, not a goto
		{Family: IPv6, Priority: 9999, Invert: true, Mark: 0x30000, Mask: 0xffff0000, Goto: 20000},  // goto outside ours
		{Family: IPv4, Priority: 9998, Invert: true, Mark: 0x10000, Mask: 0xffff0000, Goto: 10002},  // priority not ours
		{Family: IPv4, Priority: 10000, Invert: true, Mark: 0x10000, Mask: 0xffff0000, Goto: 10002}, // a goto at the fwmark rules'
		{Family: IPv6, Priority: 32766, Table: 254},
	}
	stale := []Rule{
		{Family: IPv4, Priority: 10000, Mark: 0x1ffe0, Mask: exactMask, Table: 0x1ffe0},
		{Family: IPv6, Priority: 10001, Mark: 0x20000, Mask: 0xffff0000, Blackhole: true},          // another block
		{Family: IPv4, Priority: 9999, Invert: true, Mark: 0x20000, Mask: 0xffff0000, Goto: 10002}, // skip rule of another block
		{Family: IPv6, Priority: 9999, Mark: 0x20000, Mask: 0xfffe0000, Goto: 10003},               // not inverted, another block and target
	}
	k.rules = append(slices.Clone(foreign), stale...)
	foreignRoute := Route{Family: IPv4, Table: 254, Hops: []Hop{{Gateway: netip.MustParseAddr("10.0.0.9"), IfIndex: 3}}}
	staleRoute := Route{Family: IPv6, Table: 0x1ffe0, Metric: 5, Blackhole: true}
	k.routes = []Route{foreignRoute, staleRoute}
	rc, _ := New(k)
	if err := reconcile(rc, []EndpointRoute{ep(0x10001, "10.0.0.2", "eth1")}, nil); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(foreign),
		Rule{Family: IPv4, Priority: 10001, Mark: 0x10000, Mask: 0xffff0000, Blackhole: true},
		Rule{Family: IPv6, Priority: 10001, Mark: 0x10000, Mask: 0xffff0000, Blackhole: true},
		Rule{Family: IPv4, Priority: 9999, Invert: true, Mark: 0x10000, Mask: 0xffff0000, Goto: 10002},
		Rule{Family: IPv6, Priority: 9999, Invert: true, Mark: 0x10000, Mask: 0xffff0000, Goto: 10002},
		Rule{Family: IPv4, Priority: 10000, Mark: 0x10001, Mask: exactMask, Table: 0x10001})
	if !slices.Equal(k.rules, want) {
		t.Errorf("rules = %v, want %v", k.rules, want)
	}
	if len(k.routes) != 3 || !k.routes[0].Equal(foreignRoute) || k.routes[1].Table != 0x10001 || k.routes[2].Table != 0x10001 {
		t.Errorf("routes = %v", k.routes)
	}
}

// TestCleanupRemovesCatchAllLast: Cleanup removes everything of ours, the
// catch-all after every fwmark rule and route, and nothing foreign.
func TestCleanupRemovesCatchAllLast(t *testing.T) {
	k := newFakeKernel()
	foreign := Rule{Family: IPv4, Priority: 500, Mark: 5, Mask: exactMask, Table: 100}
	k.rules = []Rule{foreign}
	rc, _ := New(k)
	paths := []ReturnPath{{VIPs: addrs("20.0.0.1", "2000::1"), Table: 0x10500, Gateways: []Nexthop{gw("10.9.0.1", "eth2")}}}
	if err := reconcile(rc, []EndpointRoute{ep(0x10001, "10.0.0.2", "eth1"), ep(0x10001, "fd00::2", "eth1")}, paths); err != nil {
		t.Fatal(err)
	}
	k.ops = nil
	if err := rc.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(k.rules, []Rule{foreign}) || len(k.routes) != 0 {
		t.Errorf("after Cleanup: rules %v routes %v, want only the foreign rule", k.rules, k.routes)
	}
	n := len(k.ops)
	if n < 2 || sorted(k.ops[n-2:]...)[0] != "del "+catchAll[0] || sorted(k.ops[n-2:]...)[1] != "del "+catchAll[1] {
		t.Errorf("Cleanup operations %q: the catch-all must go last", k.ops)
	}
}

func TestReconcilePartialFailure(t *testing.T) {
	k := newFakeKernel()
	k.fail = func(op string) error {
		if strings.Contains(op, "table 65538") {
			return errors.New("EPERM")
		}
		return nil
	}
	rc, _ := New(k)
	err := reconcile(rc, []EndpointRoute{
		ep(0x10001, "10.0.0.2", "eth1"),
		ep(0x10002, "10.0.0.3", "eth1"),    // kernel refuses its route
		ep(0x10003, "10.0.0.4", "nosuch0"), // unknown interface
		ep(0x20003, "10.0.0.5", "eth1"),    // mark and table out of range
		{Mark: 0x10001, Table: 0x10004, Via: netip.MustParseAddr("10.0.0.6"), Interface: "eth1"}, // mark reused
		ep(0x10005, "10.0.0.7", "eth1"),
	}, nil)
	if err == nil {
		t.Fatal("Add, Prune succeeded despite failures")
	}
	for _, want := range []string{"table 65538", "nosuch0", "mark 0x20003", "mark 0x10001 table 65540"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error does not wrap ErrInvalid: %v", err)
	}
	if errors.Is(err, ErrNoCatchAll) {
		t.Errorf("error wraps ErrNoCatchAll though the catch-all is in place: %v", err)
	}
	want := withBlockRules("rule ipv4 pref 10000 fwmark 0x10001 lookup 65537", "rule ipv4 pref 10000 fwmark 0x10002 lookup 65538",
		"rule ipv4 pref 10000 fwmark 0x10005 lookup 65541")
	if got := k.ruleStrings(); !slices.Equal(got, want) {
		t.Errorf("rules applied despite failures\n got  %q\n want %q", got, want)
	}
	if got := len(k.routes); got != 4 {
		t.Errorf("%d routes, want 4 (65537, 65541: gateway and blackhole)", got)
	}
}

func TestReconcileFlushesOldNeighbour(t *testing.T) {
	k := newFakeKernel()
	rc, _ := New(k)
	path := []ReturnPath{{VIPs: addrs("20.0.0.1"), Table: 0x10500, Gateways: []Nexthop{gw("10.9.0.1", "eth2")}}}
	if err := reconcile(rc, []EndpointRoute{ep(0x10001, "10.0.0.2", "eth1")}, path); err != nil {
		t.Fatal(err)
	}
	path[0].Gateways = []Nexthop{gw("10.9.0.2", "eth2")}
	if err := reconcile(rc, []EndpointRoute{ep(0x10001, "10.0.0.3", "eth1")}, path); err != nil {
		t.Fatal(err)
	}
	if want := []string{"3/10.0.0.2"}; !slices.Equal(k.neighs, want) {
		t.Errorf("flushed neighbours %q, want %q (endpoint's old IP only)", k.neighs, want)
	}
}

func TestNewValidatesRanges(t *testing.T) {
	block := MarkBlock{Value: 0x100, Mask: 0xffffff00}
	for _, r := range []Ranges{
		{Marks: MarkBlock{0, 0xffffff00}, Tables: Range{1000, 2000}, Priorities: Range{100, 200}},     // zero value
		{Marks: MarkBlock{0x180, 0xffffff00}, Tables: Range{1000, 2000}, Priorities: Range{100, 200}}, // value outside the mask
		{Marks: MarkBlock{0x100, 0xffff0f00}, Tables: Range{1000, 2000}, Priorities: Range{100, 200}}, // not a prefix mask
		{Marks: MarkBlock{0x100, 0}, Tables: Range{1000, 2000}, Priorities: Range{100, 200}},          // no mask
		{Marks: block, Tables: Range{200, 300}, Priorities: Range{100, 200}},                          // main table
		{Marks: block, Tables: Range{1000, 2000}, Priorities: Range{100, 102}},                        // no room for four priorities
		{Marks: block, Tables: Range{1000, 2000}, Priorities: Range{100, 40000}},                      // past main's rule
		{Marks: block, Tables: Range{1000, 2000}, Priorities: Range{1, 200}},                          // no room for the skip rule
	} {
		if _, err := New(newFakeKernel(), WithRanges(r)); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", r, err)
		}
	}
	if _, err := New(newFakeKernel(), WithRanges(Ranges{Marks: block, Tables: Range{1000, 2000},
		Priorities: Range{100, 103}})); err != nil {
		t.Errorf("valid ranges rejected: %v", err)
	}
	if !block.Contains(0x100) || !block.Contains(0x1ff) || block.Contains(0x200) || block.Contains(0xff) || block.Last() != 0x1ff {
		t.Errorf("block %v: Contains or Last wrong", block)
	}
}
