package route

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// ipJSON runs "ip -j ARGS" in ns and renders each object as the listed
// fields, "k=v" joined by spaces, sorted.
func ipJSON(t *testing.T, ns, args string, fields ...string) []string {
	t.Helper()
	var objs []map[string]any
	raw, err := exec.Command("ip", append([]string{"-n", ns, "-j"}, strings.Fields(args)...)...).CombinedOutput()
	if strings.Contains(string(raw), "table does not exist") {
		return nil // an IPv6 table springs into existence with its first route
	}
	if err != nil {
		t.Fatalf("ip %s: %v: %s", args, err, raw)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&objs); err != nil {
		t.Fatalf("ip %s: %v", args, err)
	}
	var out []string
	for _, o := range objs {
		var parts []string
		for _, f := range fields {
			v, ok := o[f]
			switch {
			case !ok:
				continue
			case v == nil: // a flag, such as a rule's "not"
				parts = append(parts, f)
				continue
			}
			if hops, ok := v.([]any); ok && f == "nexthops" {
				var hs []string
				for _, h := range hops {
					hm := h.(map[string]any)
					hs = append(hs, fmt.Sprintf("%v@%v", hm["gateway"], hm["dev"]))
				}
				slices.Sort(hs)
				v = strings.Join(hs, ",")
			}
			parts = append(parts, fmt.Sprintf("%s=%v", f, v))
		}
		out = append(out, strings.Join(parts, " "))
	}
	slices.Sort(out)
	return out
}

var ruleFields = []string{"priority", "not", "src", "srclen", "fwmark", "fwmask", "table", "action", "goto"}
var routeFields = []string{"type", "dst", "gateway", "dev", "metric", "nexthops"}

func rulesIn(t *testing.T, ns string) []string {
	return append(ipJSON(t, ns, "-4 rule list", ruleFields...), ipJSON(t, ns, "-6 rule list", ruleFields...)...)
}

func routesIn(t *testing.T, ns string, table uint32) []string {
	tb := fmt.Sprint(table)
	return append(ipJSON(t, ns, "-4 route show table "+tb, routeFields...),
		ipJSON(t, ns, "-6 route show table "+tb, routeFields...)...)
}

func expectLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// setupLinks creates veth pairs l0/p0 (10.1.0.1/24, fd01::1/64) and l1/p1
// (10.2.0.1/24, fd02::1/64), foreign rules and route, stale ones in our
// ranges (a previous run's), and main-table defaults.
func setupLinks(t *testing.T, ns string) {
	for _, c := range []string{
		"link add l0 type veth peer name p0", "link add l1 type veth peer name p1",
		"addr add 10.1.0.1/24 dev l0", "addr add fd01::1/64 dev l0 nodad",
		"addr add 10.2.0.1/24 dev l1", "addr add fd02::1/64 dev l1 nodad",
		"link set l0 up", "link set p0 up", "link set l1 up", "link set p1 up",
		"rule add pref 500 fwmark 5 lookup 100", "route add default via 10.1.0.9 table 100",
		"rule add pref 501 fwmark 0x30000/0xffff0000 blackhole", // foreign: priority not ours
		"rule add pref 10000 fwmark 0x1ffe0 lookup 131040", "route add default via 10.1.0.8 table 131040",
		"-6 rule add pref 10002 from 2000::99 lookup 131054",
		"-6 rule add pref 10001 fwmark 0x20000/0xffff0000 blackhole", // a catch-all of another block
		// Main table: what must never carry VIP traffic or marked packets.
		"route add default via 10.1.0.99", "-6 route add default via fd01::99",
	} {
		ipIn(t, ns, c)
	}
}

// forwardingLinks is a namespace with setupLinks' links and rules that
// forwards both families.
func forwardingLinks(t *testing.T, prefix string) (ns string, fd int) {
	t.Helper()
	require.Root(t)
	require.Programs(t, "ip")
	ns, fd = netns.New(t, prefix)
	setupLinks(t, ns)
	netns.In(t, ns, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	return ns, fd
}

// baseRules are the namespace's own rules and the foreign ones of setupLinks.
var baseRules = []string{
	"priority=0 src=all table=local", "priority=0 src=all table=local",
	"priority=32766 src=all table=main", "priority=32766 src=all table=main",
	"priority=32767 src=all table=default",
	"priority=500 src=all fwmark=0x5 table=100",
	"priority=501 src=all fwmark=0x30000 fwmask=0xffff0000 action=blackhole",
}

// catchAllRules are the catch-all blackhole and the skip rules of
// DefaultRanges, as ip shows them.
var catchAllRules = []string{
	"priority=10001 src=all fwmark=0x10000 fwmask=0xffff0000 action=blackhole",
	"priority=10001 src=all fwmark=0x10000 fwmask=0xffff0000 action=blackhole",
	"priority=9999 not src=all fwmark=0x10000 fwmask=0xffff0000 goto=10002",
	"priority=9999 not src=all fwmark=0x10000 fwmask=0xffff0000 goto=10002",
}

// routeGet asks the kernel how a packet from src arriving on p0 with mark
// would be routed (dst in src's family).
func routeGet(ns, src string, mark uint32) (string, error) {
	dst, fam := "8.8.8.8", "-4"
	if strings.Contains(src, ":") {
		dst, fam = "2001:db8:99::8", "-6"
	}
	out, err := exec.Command("ip", "-n", ns, fam, "route", "get", dst, "from", src, "iif", "p0", "mark", fmt.Sprint(mark)).CombinedOutput()
	return string(out), err
}

// expectRouted checks that a packet with mark is routed via want.
func expectRouted(t *testing.T, ns, src string, mark uint32, want string) {
	t.Helper()
	if out, err := routeGet(ns, src, mark); err != nil || !strings.Contains(out, "via "+want+" ") {
		t.Errorf("mark %#x from %s: %q (err %v), want via %s", mark, src, out, err, want)
	}
}

// expectBlackholed checks that a packet with mark is dropped by routing.
func expectBlackholed(t *testing.T, ns, src string, mark uint32) {
	t.Helper()
	if out, err := routeGet(ns, src, mark); err == nil {
		t.Errorf("mark %#x from %s is routed: %q; want the catch-all blackhole", mark, src, out)
	}
}

func TestIntegrationReconcile(t *testing.T) {
	ns, fd := forwardingLinks(t, "sllbrd-k-rt")
	k, err := NewNetlinkKernel(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	rc, err := New(k)
	if err != nil {
		t.Fatal(err)
	}
	eps := []EndpointRoute{
		{Mark: 0x10001, Table: 0x10001, Via: netip.MustParseAddr("10.1.0.2"), Interface: "l0"},
		{Mark: 0x10002, Table: 0x10002, Via: netip.MustParseAddr("fd01::2"), Interface: "l0"},
	}
	paths := []ReturnPath{{VIPs: addrs("20.0.0.1", "2000::1"), Table: 0x10100, Gateways: []Nexthop{
		{netip.MustParseAddr("10.2.0.254"), "l1"}, {netip.MustParseAddr("10.2.0.253"), "l1"},
		{netip.MustParseAddr("fd02::fe"), "l1"}}}}
	for range 2 { // the second pass must change nothing
		if err := reconcile(rc, eps, paths); err != nil {
			t.Fatalf("Add, Prune: %v", err)
		}
	}
	expectLines(t, "rules", rulesIn(t, ns), append(append(slices.Clone(baseRules), catchAllRules...),
		"priority=10000 src=all fwmark=0x10001 table=65537",
		"priority=10000 src=all fwmark=0x10002 table=65538",
		"priority=10002 src=20.0.0.1 table=65792",
		"priority=10002 src=2000::1 table=65792",
		"priority=10003 src=20.0.0.1 action=blackhole",
		"priority=10003 src=2000::1 action=blackhole",
	))
	expectLines(t, "table 65537", routesIn(t, ns, 0x10001), []string{"dst=default gateway=10.1.0.2 dev=l0 metric=100",
		"type=blackhole dst=default metric=1000000"})
	expectLines(t, "table 65538", routesIn(t, ns, 0x10002), []string{"dst=default gateway=fd01::2 dev=l0 metric=100",
		"type=blackhole dst=default dev=lo metric=1000000"})
	expectLines(t, "table 65792", routesIn(t, ns, 0x10100), []string{
		"type=blackhole dst=default metric=1000000", "type=blackhole dst=default dev=lo metric=1000000",
		"dst=default metric=100 nexthops=10.2.0.253@l1,10.2.0.254@l1",
		"dst=default gateway=fd02::fe dev=l1 metric=100",
	})
	expectLines(t, "foreign table 100", routesIn(t, ns, 100), []string{"dst=default gateway=10.1.0.9 dev=l0"})
	expectLines(t, "stale table 131040", routesIn(t, ns, 131040), nil)

	// The catch-all: a mark of the block with no table is dropped in both
	// families; marks with a table, and marks outside the block, are not.
	expectRouted(t, ns, "10.1.0.50", 0x10001, "10.1.0.2")
	expectRouted(t, ns, "fd01::50", 0x10002, "fd01::2")
	for _, src := range []string{"10.1.0.50", "fd01::50"} {
		expectBlackholed(t, ns, src, 0x10005)
		expectBlackholed(t, ns, src, 0x1ffff)
	}
	expectRouted(t, ns, "10.1.0.50", 0x20005, "10.1.0.99")
	expectRouted(t, ns, "fd01::50", 0x20005, "fd01::99")

	// Two phases: an endpoint left out of Add keeps its rule and route (its
	// packets still reach it) until Prune; then its mark is blackholed.
	next := []EndpointRoute{eps[1], {Mark: 0x10003, Table: 0x10003, Via: netip.MustParseAddr("10.1.0.4"), Interface: "l0"}}
	if err := rc.Add(next, paths); err != nil {
		t.Fatalf("Add: %v", err)
	}
	expectRouted(t, ns, "10.1.0.50", 0x10001, "10.1.0.2")
	expectRouted(t, ns, "10.1.0.50", 0x10003, "10.1.0.4")
	if err := rc.Prune(next, paths); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	expectBlackholed(t, ns, "10.1.0.50", 0x10001)
	expectLines(t, "table 65537 after prune", routesIn(t, ns, 0x10001), nil)

	// New endpoint IP for mark 0x10003: route replaced, old neighbour flushed.
	ipIn(t, ns, "neigh replace 10.1.0.4 lladdr 02:00:00:00:00:04 dev l0 nud permanent")
	ipIn(t, ns, "neigh replace 10.1.0.7 lladdr 02:00:00:00:00:07 dev l0 nud permanent")
	next[1].Via = netip.MustParseAddr("10.1.0.3")
	// Return path: IPv6 gateways now two (ECMP), IPv4 none (blackhole only).
	paths[0].Gateways = []Nexthop{{netip.MustParseAddr("fd02::fe"), "l1"}, {netip.MustParseAddr("fd02::fd"), "l1"}}
	if err := reconcile(rc, next, paths); err != nil {
		t.Fatalf("Add, Prune update: %v", err)
	}
	expectLines(t, "table 65539 after update", routesIn(t, ns, 0x10003), []string{"dst=default gateway=10.1.0.3 dev=l0 metric=100",
		"type=blackhole dst=default metric=1000000"})
	expectLines(t, "neighbours", ipJSON(t, ns, "-4 neigh show dev l0", "dst"), []string{"dst=10.1.0.7"})
	expectLines(t, "table 65792 after update", routesIn(t, ns, 0x10100), []string{
		"type=blackhole dst=default metric=1000000", "type=blackhole dst=default dev=lo metric=1000000",
		"dst=default metric=100 nexthops=fd02::fd@l1,fd02::fe@l1",
	})

	// No IPv4 gateway: VIP-sourced traffic hits the blackhole, not main.
	if out, err := exec.Command("ip", "-n", ns, "route", "get", "8.8.8.8", "from", "20.0.0.1", "iif", "p0").CombinedOutput(); err == nil {
		t.Errorf("traffic from VIP without gateway is routed: %s", out)
	}
	if out := ipIn(t, ns, "route get 8.8.8.8 from 20.0.0.2 iif p0"); !strings.Contains(out, "via 10.1.0.99") {
		t.Errorf("control: non-VIP traffic not routed by main: %s", out)
	}

	// Nothing desired: ours gone but the catch-all, foreign kept.
	if err := reconcile(rc, nil, nil); err != nil {
		t.Fatalf("Add, Prune empty: %v", err)
	}
	expectLines(t, "rules after empty", rulesIn(t, ns), append(slices.Clone(baseRules), catchAllRules...))
	expectBlackholed(t, ns, "fd01::50", 0x10002)
	// Cleanup: the catch-all and the skip rules go too.
	if err := rc.Cleanup(); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	expectLines(t, "rules after cleanup", rulesIn(t, ns), slices.Clone(baseRules))
	for _, tb := range []uint32{0x10001, 0x10002, 0x10003, 0x10100} {
		expectLines(t, fmt.Sprint("table ", tb, " after cleanup"), routesIn(t, ns, tb), nil)
	}
}
