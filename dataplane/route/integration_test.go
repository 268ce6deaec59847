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
			if !ok {
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

var ruleFields = []string{"priority", "src", "srclen", "fwmark", "table"}
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
// (10.2.0.1/24, fd02::1/64), foreign rule+route, and stale ones in our range.
func setupLinks(t *testing.T, ns string) {
	for _, c := range []string{
		"link add l0 type veth peer name p0", "link add l1 type veth peer name p1",
		"addr add 10.1.0.1/24 dev l0", "addr add fd01::1/64 dev l0 nodad",
		"addr add 10.2.0.1/24 dev l1", "addr add fd02::1/64 dev l1 nodad",
		"link set l0 up", "link set p0 up", "link set l1 up", "link set p1 up",
		"rule add pref 500 fwmark 5 lookup 100", "route add default via 10.1.0.9 table 100",
		"rule add pref 10000 fwmark 10999 lookup 10999", "route add default via 10.1.0.8 table 10999",
		"-6 rule add pref 10001 from 2000::99 lookup 10998",
		"route add default via 10.1.0.99", // main table: what must never carry VIP traffic
	} {
		ipIn(t, ns, c)
	}
}

func TestIntegrationReconcile(t *testing.T) {
	ns, fd := netns.New(t, "sllbrd-k-rt")
	setupLinks(t, ns)
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
		{Mark: 10001, Table: 10001, Via: netip.MustParseAddr("10.1.0.2"), Interface: "l0"},
		{Mark: 10002, Table: 10002, Via: netip.MustParseAddr("fd01::2"), Interface: "l0"},
	}
	paths := []ReturnPath{{VIPs: addrs("20.0.0.1", "2000::1"), Table: 10100, Gateways: []Nexthop{
		{netip.MustParseAddr("10.2.0.254"), "l1"}, {netip.MustParseAddr("10.2.0.253"), "l1"},
		{netip.MustParseAddr("fd02::fe"), "l1"}}}}
	for range 2 { // the second pass must change nothing
		if err := rc.Reconcile(eps, paths); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	expectLines(t, "rules", rulesIn(t, ns), []string{
		"priority=0 src=all table=local", "priority=0 src=all table=local",
		"priority=32766 src=all table=main", "priority=32766 src=all table=main",
		"priority=32767 src=all table=default",
		"priority=500 src=all fwmark=0x5 table=100",
		"priority=10000 src=all fwmark=0x2711 table=10001",
		"priority=10000 src=all fwmark=0x2712 table=10002",
		"priority=10001 src=20.0.0.1 table=10100",
		"priority=10001 src=2000::1 table=10100",
	})
	expectLines(t, "table 10001", routesIn(t, ns, 10001), []string{"dst=default gateway=10.1.0.2 dev=l0 metric=100",
		"type=blackhole dst=default metric=1000000"})
	expectLines(t, "table 10002", routesIn(t, ns, 10002), []string{"dst=default gateway=fd01::2 dev=l0 metric=100",
		"type=blackhole dst=default dev=lo metric=1000000"})
	expectLines(t, "table 10100", routesIn(t, ns, 10100), []string{
		"type=blackhole dst=default metric=1000000", "type=blackhole dst=default dev=lo metric=1000000",
		"dst=default metric=100 nexthops=10.2.0.253@l1,10.2.0.254@l1",
		"dst=default gateway=fd02::fe dev=l1 metric=100",
	})
	expectLines(t, "foreign table 100", routesIn(t, ns, 100), []string{"dst=default gateway=10.1.0.9 dev=l0"})
	expectLines(t, "stale table 10999", routesIn(t, ns, 10999), nil)

	// New endpoint IP for mark 10001: route replaced, old neighbour flushed.
	ipIn(t, ns, "neigh replace 10.1.0.2 lladdr 02:00:00:00:00:02 dev l0 nud permanent")
	ipIn(t, ns, "neigh replace 10.1.0.7 lladdr 02:00:00:00:00:07 dev l0 nud permanent")
	eps[0].Via = netip.MustParseAddr("10.1.0.3")
	// Return path: IPv6 gateways now two (ECMP), IPv4 none (blackhole only).
	paths[0].Gateways = []Nexthop{{netip.MustParseAddr("fd02::fe"), "l1"}, {netip.MustParseAddr("fd02::fd"), "l1"}}
	if err := rc.Reconcile(eps, paths); err != nil {
		t.Fatalf("Reconcile update: %v", err)
	}
	expectLines(t, "table 10001 after update", routesIn(t, ns, 10001), []string{"dst=default gateway=10.1.0.3 dev=l0 metric=100",
		"type=blackhole dst=default metric=1000000"})
	expectLines(t, "neighbours", ipJSON(t, ns, "-4 neigh show dev l0", "dst"), []string{"dst=10.1.0.7"})
	expectLines(t, "table 10100 after update", routesIn(t, ns, 10100), []string{
		"type=blackhole dst=default metric=1000000", "type=blackhole dst=default dev=lo metric=1000000",
		"dst=default metric=100 nexthops=fd02::fd@l1,fd02::fe@l1",
	})

	// No IPv4 gateway: VIP-sourced traffic hits the blackhole, not main.
	netns.Run(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	if out, err := exec.Command("ip", "-n", ns, "route", "get", "8.8.8.8", "from", "20.0.0.1", "iif", "p0").CombinedOutput(); err == nil {
		t.Errorf("traffic from VIP without gateway is routed: %s", out)
	}
	if out := ipIn(t, ns, "route get 8.8.8.8 from 20.0.0.2 iif p0"); !strings.Contains(out, "via 10.1.0.99") {
		t.Errorf("control: non-VIP traffic not routed by main: %s", out)
	}

	// Nothing desired: ours gone, foreign kept.
	if err := rc.Reconcile(nil, nil); err != nil {
		t.Fatalf("Reconcile empty: %v", err)
	}
	expectLines(t, "rules after empty", rulesIn(t, ns), []string{
		"priority=0 src=all table=local", "priority=0 src=all table=local",
		"priority=32766 src=all table=main", "priority=32766 src=all table=main",
		"priority=32767 src=all table=default", "priority=500 src=all fwmark=0x5 table=100",
	})
	for _, tb := range []uint32{10001, 10002, 10100} {
		expectLines(t, fmt.Sprint("table ", tb, " after empty"), routesIn(t, ns, tb), nil)
	}
}
