package rtlookup

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationGetAndWatch asks for routes that exist, a blackhole and
// none, locally sent and forwarded, with and without a mark: Via accepts
// only the route through the gateway; Watch counts the bad answers.
func TestIntegrationGetAndWatch(t *testing.T) {
	require.Root(t)
	require.Programs(t, "ip")
	ns, _ := netns.New(t, "sllbrd-rtlookup")
	for _, c := range []string{
		"link add l0 type veth peer name p0", "link set l0 up", "link set p0 up",
		"addr add 10.1.0.1/24 dev l0", "addr add fd01::1/64 dev l0 nodad",
		"link set lo up", "addr add 20.0.0.1/32 dev lo", // a local source for IPv4's output lookup
		"rule add pref 100 from 20.0.0.0/24 lookup 100", "-6 rule add pref 100 from 2000::1 lookup 100",
		"route add default via 10.1.0.2 table 100", "-6 route add default via fd01::2 table 100",
		"rule add pref 50 fwmark 7 lookup 200", "-6 rule add pref 50 fwmark 7 lookup 200",
		"route add blackhole default table 200", "-6 route add blackhole default table 200",
	} {
		netns.Run(t, append([]string{"ip", "-n", ns}, strings.Fields(c)...)...)
	}
	netns.In(t, ns, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	p0 := uint32(0)
	netns.DoOrFail(t, ns, func() error {
		c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		link, err := net.InterfaceByName("p0")
		if err != nil {
			return err
		}
		p0 = uint32(link.Index)
		for _, tc := range []struct {
			q    Query
			want string // Via's verdict for table 100 via the gateway: "" or a part of it
		}{
			{Query{Src: addr("20.0.0.1"), Dst: addr("8.8.8.8")}, ""},
			{Query{Src: addr("2000::1"), Dst: addr("2001:db8::8")}, ""},
			{Query{Src: addr("20.0.0.9"), Dst: addr("8.8.8.8"), IIF: p0}, ""},
			{Query{Src: addr("2000::1"), Dst: addr("2001:db8::8"), IIF: p0}, ""},
			{Query{Src: addr("20.0.0.9"), Dst: addr("8.8.8.8"), IIF: p0, Mark: 7}, "invalid argument"}, // the blackhole
			{Query{Src: addr("2000::1"), Dst: addr("2001:db8::8"), IIF: p0, Mark: 7}, "invalid argument"},
			{Query{Src: addr("30.0.0.9"), Dst: addr("8.8.8.8"), IIF: p0}, "unreachable"}, // no rule: main, no default
			{Query{Src: addr("20.0.0.1"), Dst: addr("2001:db8::8")}, "one family"},
		} {
			a, err := Get(c, tc.q)
			got := Via(a, err, 100, addr("10.1.0.2"), addr("fd01::2"))
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("%s: %q, want %q", tc.q, got, tc.want)
			}
		}
		a, err := Get(c, Query{Src: addr("20.0.0.1"), Dst: addr("8.8.8.8")})
		if err != nil || a.Type != unix.RTN_UNICAST || a.Table != 100 || a.Gateway != addr("10.1.0.2") {
			t.Errorf("answer %s, %v", a, err)
		}
		if got := Via(a, nil, 100, addr("10.1.0.3")); !strings.Contains(got, "one of the gateways") {
			t.Errorf("Via with another gateway: %q", got)
		}
		return nil
	})

	good, bad := Query{Src: addr("2000::1"), Dst: addr("2001:db8::8"), IIF: p0}, Query{Src: addr("2000::1"), Dst: addr("2001:db8::8"), IIF: p0, Mark: 7}
	stop := Watch(ns, []Query{good, bad}, func(_ Query, a Answer, err error) string { return Via(a, err, 100) })
	res := stop()
	if res.Err != nil || res.Lookups < 2 || res.Lookups != 2*res.Bad || !strings.HasPrefix(res.FirstBad, bad.String()) {
		t.Errorf("Watch: %+v", res)
	}
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }
