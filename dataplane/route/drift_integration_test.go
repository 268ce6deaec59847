package route

import (
	"slices"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// listings is a NetlinkKernel (a ChangeWatcher) that counts its listings.
type listings struct {
	*NetlinkKernel
	count int
}

func (l *listings) Rules() ([]Rule, error) { l.count++; return l.NetlinkKernel.Rules() }

// TestIntegrationRepairsChangesElsewhere: an Add and Prune that change
// nothing do not list the kernel (the Reconciler's own changes are not
// taken for changes elsewhere), and after each change someone else makes
// to our rules and routes (a rule or route deleted, a route replaced, a
// stale rule and route added, a skip rule deleted, another block's added,
// the IPv4 routes of a link flushed by the
// kernel when it goes down, without a route notification), the next Add
// and Prune bring back exactly the state before.
func TestIntegrationRepairsChangesElsewhere(t *testing.T) {
	ns, fd := netns.New(t, "sllbrd-k-drift")
	setupLinks(t, ns)
	netns.Run(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
		"net.ipv6.conf.l0.keep_addr_on_down=1")
	// l2: IPv4 only, so that nothing but the link's own notification
	// announces that its routes were flushed.
	for _, c := range []string{"link add l2 type veth peer name p2", "addr add 10.3.0.1/24 dev l2"} {
		ipIn(t, ns, c)
	}
	netns.Run(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.l2.disable_ipv6=1", "net.ipv6.conf.p2.disable_ipv6=1")
	ipIn(t, ns, "link set l2 up")
	ipIn(t, ns, "link set p2 up")
	// The kernel's own changes (duplicate address detection of the links'
	// link-local addresses ending, with their routes) are changes elsewhere
	// too: let them end before counting listings.
	waitNoTentative(t, ns)
	k := &listings{NetlinkKernel: newKernel(t, fd)}
	rc, err := New(k)
	if err != nil {
		t.Fatal(err)
	}
	eps := []EndpointRoute{ep(0x10001, "10.1.0.2", "l0"), ep(0x10002, "fd01::2", "l0"), ep(0x10003, "10.3.0.2", "l2")}
	paths := []ReturnPath{{VIPs: addrs("20.0.0.1", "2000::1"), Table: 0x10100, Gateways: []Nexthop{
		gw("10.2.0.254", "l1"), gw("10.2.0.253", "l1"), gw("fd02::fe", "l1")}}}
	state := func() []string {
		out := rulesIn(t, ns)
		for _, tb := range []uint32{0x10001, 0x10002, 0x10003, 0x10009, 0x10100} {
			out = append(out, routesIn(t, ns, tb)...)
		}
		slices.Sort(out)
		return out
	}
	if err := reconcile(rc, eps, paths); err != nil {
		t.Fatal(err)
	}
	want := state()
	before := k.count
	for range 3 {
		if err := reconcile(rc, eps, paths); err != nil {
			t.Fatal(err)
		}
	}
	if k.count != before {
		t.Errorf("%d listings for three Add and Prune that change nothing, want none", k.count-before)
	}

	for _, change := range []string{
		"rule del pref 10000 fwmark 0x10001 lookup 65537",
		"-6 route del default table 65538 metric 100",
		"route replace default table 65792 metric 100 via 10.2.0.9 dev l1",
		"-6 route replace blackhole default table 65538 metric 100",
		"rule add pref 10000 fwmark 0x10009 lookup 65545; route add default via 10.1.0.9 table 65545",
		"rule del pref 9999 not fwmark 0x10000/0xffff0000 goto 10002",
		"-6 rule del pref 9999 not fwmark 0x10000/0xffff0000 goto 10002; -6 rule add pref 9999 not fwmark 0x20000/0xffff0000 goto 10002",
		"link set l0 down; link set l0 up",
	} {
		for _, c := range strings.Split(change, "; ") {
			ipIn(t, ns, c)
		}
		if err := reconcile(rc, eps, paths); err != nil {
			t.Fatalf("after %q: %v", change, err)
		}
		expectLines(t, "after "+change, state(), slices.Clone(want))
	}

	// The kernel flushes the IPv4 routes of a link that goes down without
	// a route notification: the next Add finds the endpoint's route
	// missing and cannot put it back while the link is down; once the
	// link is up, it does.
	ipIn(t, ns, "link set l2 down")
	if err := reconcile(rc, eps, paths); err == nil || !strings.Contains(err.Error(), "table 65539") {
		t.Errorf("with l2 down: %v; want the route of table 65539 refused", err)
	}
	ipIn(t, ns, "link set l2 up")
	if err := reconcile(rc, eps, paths); err != nil {
		t.Fatalf("with l2 up again: %v", err)
	}
	expectLines(t, "with l2 up again", state(), slices.Clone(want))
	expectRouted(t, ns, "10.1.0.50", 0x10001, "10.1.0.2")
	expectRouted(t, ns, "fd01::50", 0x10002, "fd01::2")
	if out, err := routeGet(ns, "20.0.0.1", 0); err != nil || !strings.Contains(out, "10.2.0.25") {
		t.Errorf("from the VIP: %q (%v), want via a gateway of l1", out, err)
	}
}
