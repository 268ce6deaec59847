package route

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// gatewaySteps are sets of next hops ("ADDRESS@DEVICE") a table goes
// through, per family, on the links of setupLinks: one hop, three, two
// others, one other, and (from the last back to the first) one to another
// one. Each step's set differs from the one before it.
var gatewaySteps = map[Family][][]string{
	IPv4: {
		{"10.2.0.254@l1"},
		{"10.1.0.253@l0", "10.2.0.253@l1", "10.2.0.254@l1"},
		{"10.1.0.252@l0", "10.2.0.252@l1"},
		{"10.2.0.253@l1"},
	},
	IPv6: {
		{"fd02::fe@l1"},
		{"fd01::fd@l0", "fd02::fd@l1", "fd02::fe@l1"},
		{"fd01::fc@l0", "fd02::fc@l1"},
		{"fd02::fd@l1"},
	},
}

// nexthops parses "ADDRESS@DEVICE" strings.
func nexthops(hops []string) []Nexthop {
	var out []Nexthop
	for _, h := range hops {
		addr, dev, _ := strings.Cut(h, "@")
		out = append(out, gw(addr, dev))
	}
	return out
}

// routeLines is how ip shows a default route over hops at GatewayMetric,
// and the blackhole, in routeFields.
func routeLines(fam Family, hops []string) []string {
	blackhole := "type=blackhole dst=default metric=1000000"
	if fam == IPv6 {
		blackhole = "type=blackhole dst=default dev=lo metric=1000000"
	}
	if len(hops) == 1 {
		addr, dev, _ := strings.Cut(hops[0], "@")
		return []string{fmt.Sprintf("dst=default gateway=%s dev=%s metric=100", addr, dev), blackhole}
	}
	return []string{"dst=default metric=100 nexthops=" + strings.Join(sorted(slices.Clone(hops)...), ","), blackhole}
}

// newKernel opens a NetlinkKernel in the namespace fd, closed in Cleanup.
func newKernel(t testing.TB, fd int) *NetlinkKernel {
	t.Helper()
	k, err := NewNetlinkKernel(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// TestIntegrationReplaceHopSets replaces a default route over one hop,
// several (ECMP), other several, one: every change is one ReplaceRoute,
// after which the table holds exactly the wanted hops and the untouched
// blackhole; the kernel announces no deletion in the table on the way.
func TestIntegrationReplaceHopSets(t *testing.T) {
	require.Root(t)
	require.Programs(t, "ip")
	ns, fd := netns.New(t, "sllbrd-k-hops")
	setupLinks(t, ns)
	k := newKernel(t, fd)
	mon := newRouteMonitor(t, fd)
	const table = 0x10100
	for _, fam := range []Family{IPv4, IPv6} {
		blackhole := Route{Family: fam, Table: table, Metric: BlackholeMetric, Blackhole: true}
		if err := k.ReplaceRoute(blackhole); err != nil {
			t.Fatalf("%s: %v", blackhole, err)
		}
		mon.expect(t, blackhole)
		steps := gatewaySteps[fam]
		for i, step := range append(slices.Clone(steps), steps[0], steps[1]) { // 1, 3, 2, 1, 1, 3 hops
			r := Route{Family: fam, Table: table, Metric: GatewayMetric}
			for _, n := range nexthops(step) {
				idx, err := k.LinkIndex(n.Interface)
				if err != nil {
					t.Fatal(err)
				}
				r.Hops = append(r.Hops, Hop{Gateway: n.Addr, IfIndex: idx})
			}
			tableroute.SortHops(r.Hops)
			if err := k.ReplaceRoute(r); err != nil {
				t.Fatalf("IPv%d step %d: %s: %v", fam, i, r, err)
			}
			mon.expect(t, r)
			if got := routesOf(t, k, fam, table); !slices.EqualFunc(got, []Route{r, blackhole}, Route.Equal) {
				t.Errorf("IPv%d step %d: Routes() in table %d:\n got  %v\n want %v", fam, i, table, got, []Route{r, blackhole})
			}
			af := fmt.Sprintf("-%d route show table %d", fam, table)
			expectLines(t, fmt.Sprintf("IPv%d step %d: ip %s", fam, i, af), ipJSON(t, ns, af, routeFields...), routeLines(fam, step))
		}
	}
}

// routesOf returns the kernel's default routes of fam in table, hops
// sorted, the gateway route first.
func routesOf(t *testing.T, k Kernel, fam Family, table uint32) []Route {
	t.Helper()
	all, err := k.Routes()
	if err != nil {
		t.Fatal(err)
	}
	var out []Route
	for _, r := range all {
		if r.Family == fam && r.Table == table {
			tableroute.SortHops(r.Hops)
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Route) int { return int(a.Metric) - int(b.Metric) })
	return out
}

// routeMonitor receives the kernel's route notifications (RTNLGRP_IPV4_ROUTE,
// RTNLGRP_IPV6_ROUTE) of a namespace.
type routeMonitor struct{ c *netlink.Conn }

func newRouteMonitor(t *testing.T, fd int) *routeMonitor {
	t.Helper()
	c, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: fd, Groups: unix.RTMGRP_IPV4_ROUTE | unix.RTMGRP_IPV6_ROUTE})
	if err != nil {
		t.Fatalf("route monitor: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &routeMonitor{c: c}
}

// expect reads the notifications up to the one announcing want's key (the
// kernel queues them before it acknowledges the change, so it is there),
// which must announce want whole, and fails on any other notification for
// want's table on the way: a deletion, or a change of another route (the
// blackhole).
func (m *routeMonitor) expect(t *testing.T, want Route) {
	t.Helper()
	if err := m.c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil { // only against a hang
		t.Fatal(err)
	}
	for {
		msgs, err := m.c.Receive()
		if err != nil {
			t.Fatalf("waiting for the notification of %s: %v", want, err)
		}
		for _, msg := range msgs {
			var rm rtnetlink.RouteMessage
			if err := rm.UnmarshalBinary(msg.Data); err != nil {
				t.Fatalf("route notification: %v", err)
			}
			if rm.Attributes.Table != want.Table {
				continue
			}
			if msg.Header.Type != unix.RTM_NEWROUTE || rm.Attributes.Priority != want.Metric || rm.Family != tableroute.AF(want.Family) {
				t.Errorf("while writing %s the kernel announced another change in the table: type %d (%d: new, %d: deleted) metric %d family %d",
					want, msg.Header.Type, unix.RTM_NEWROUTE, unix.RTM_DELROUTE, rm.Attributes.Priority, rm.Family)
				continue
			}
			if got, ok := tableroute.RouteOf(&rm); !ok || !got.Equal(want) {
				t.Errorf("the kernel announced %s (a default route: %v), want %s", got, ok, want)
			}
			return
		}
	}
}
