package targetnet

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func prefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

var subnets = prefixes("169.111.100.0/24", "fd00:111::/64")

func gatewayA() Gateway {
	return Gateway{Name: "sllb-a", Table: 50000, Subnets: subnets,
		VIPs:     prefixes("20.0.0.1/32", "2001:db8::1/128"),
		NextHops: addrs("169.111.100.2", "169.111.100.1", "fd00:111::1")}
}

func apply(t *testing.T, a *Applier, d Desired) Result {
	t.Helper()
	res, err := a.Apply(d)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

// ours lists the fake kernel's objects in our ranges, as strings.
func (f *fakeKernel) ours() []string {
	var out []string
	for _, a := range f.addrs {
		if a.Protocol == Protocol {
			out = append(out, a.String())
		}
	}
	for _, r := range f.rules {
		if r.Priority == RulePriority || r.Priority == DropRulePriority {
			out = append(out, r.String())
		}
	}
	for _, r := range f.routes {
		if ownsTable(r.Table) {
			out = append(out, r.String())
		}
	}
	slices.Sort(out)
	return out
}

var stateA = []string{
	"address 20.0.0.1/32 ifindex 1 proto 83",
	"address 2001:db8::1/128 ifindex 1 proto 83",
	"route ipv4 table 50000 default metric 100 via 169.111.100.1 ifindex 2 via 169.111.100.2 ifindex 2",
	"route ipv4 table 50000 default metric 1000000 blackhole",
	"route ipv6 table 50000 default metric 100 via fd00:111::1 ifindex 2",
	"route ipv6 table 50000 default metric 1000000 blackhole",
	"rule ipv4 pref 10200 from 20.0.0.1/32 lookup 50000 proto 83",
	"rule ipv4 pref 10201 from 20.0.0.1/32 blackhole proto 83",
	"rule ipv6 pref 10200 from 2001:db8::1/128 lookup 50000 proto 83",
	"rule ipv6 pref 10201 from 2001:db8::1/128 blackhole proto 83",
}

func TestApplyFromNothing(t *testing.T) {
	k := newFakeKernel()
	res := apply(t, New(k), Desired{Gateways: []Gateway{gatewayA()}})
	if got := k.ours(); !slices.Equal(got, stateA) {
		t.Fatalf("kernel:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(stateA, "\n"))
	}
	// Routes, then rules, then addresses: a VIP is local only once its
	// replies have a route; blackholes before the next hops.
	kinds := ""
	for _, op := range k.ops {
		switch {
		case strings.Contains(op, " rule "):
			kinds += "r"
		case strings.Contains(op, "blackhole"):
			kinds += "B"
		case strings.HasPrefix(op, "replace"):
			kinds += "R"
		case strings.Contains(op, " address "):
			kinds += "a"
		}
	}
	if kinds != "BBRRrrrraa" {
		t.Errorf("operations %q (B blackhole, R route, r rule, a address), want BBRRrrrraa:\n%s", kinds, strings.Join(k.ops, "\n"))
	}
	want := GatewayResult{Name: "sllb-a", Table: 50000, VIPs: gatewayA().VIPs,
		NextHops: addrs("169.111.100.1", "169.111.100.2", "fd00:111::1"), Interfaces: map[Family]string{IPv4: "net1", IPv6: "net1"}}
	if len(res.Gateways) != 1 || fmt.Sprint(res.Gateways[0]) != fmt.Sprint(want) || len(res.Conflicts) != 0 {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if res.VIPCount() != 2 || res.NextHopCount(IPv4) != 2 || res.NextHopCount(IPv6) != 1 {
		t.Errorf("counts: %d VIPs, %d+%d next hops", res.VIPCount(), res.NextHopCount(IPv4), res.NextHopCount(IPv6))
	}
}

func TestApplyIsIdempotentAndRestartSafe(t *testing.T) {
	k := newFakeKernel()
	d := Desired{Gateways: []Gateway{gatewayA()}}
	apply(t, New(k), d)
	k.ops = nil
	apply(t, New(k), d) // a new Applier: a restarted sllbrd target
	if len(k.ops) != 0 {
		t.Errorf("applying the same state again changed: %v", k.ops)
	}
	// A restart with less: what the previous run made and is not wanted goes.
	apply(t, New(k), Desired{})
	if got := k.ours(); len(got) != 0 {
		t.Errorf("after an empty apply, ours left: %v", got)
	}
	if len(k.rules) != 4 || len(k.routes) != 1 || len(k.addrs) != 4 {
		t.Errorf("foreign objects touched: %d rules, %d routes, %d addresses", len(k.rules), len(k.routes), len(k.addrs))
	}
}

func TestNextHopsReplacedInOneOperation(t *testing.T) {
	k := newFakeKernel()
	a := New(k)
	g := gatewayA()
	apply(t, a, Desired{Gateways: []Gateway{g}})
	k.ops = nil
	g.NextHops = addrs("169.111.100.1", "169.111.100.3", "fd00:111::1") // .2 gone, .3 new
	res := apply(t, a, Desired{Gateways: []Gateway{g}})
	want := []string{
		"replace route ipv4 table 50000 default metric 100 via 169.111.100.1 ifindex 2 via 169.111.100.3 ifindex 2",
		"flush 169.111.100.2",
	}
	if !slices.Equal(k.ops, want) {
		t.Errorf("operations:\n%s\nwant:\n%s", strings.Join(k.ops, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(res.Gateways[0].NextHops, addrs("169.111.100.1", "169.111.100.3", "fd00:111::1")) {
		t.Errorf("next hops %v", res.Gateways[0].NextHops)
	}
}

func TestNoNextHopsKeepsTheLastOnes(t *testing.T) {
	k := newFakeKernel()
	a := New(k)
	g := gatewayA()
	apply(t, a, Desired{Gateways: []Gateway{g}})
	k.ops = nil
	g.NextHops = nil
	res := apply(t, a, Desired{Gateways: []Gateway{g}})
	if len(k.ops) != 0 || !slices.Equal(k.ours(), stateA) {
		t.Errorf("no next hops changed the kernel: %v", k.ops)
	}
	if gr := res.Gateways[0]; !slices.Equal(gr.Kept, Families) || len(gr.NextHops) != 3 {
		t.Errorf("result %+v: want both families kept with their 3 next hops", gr)
	}
	// A new set replaces the kept one.
	g.NextHops = addrs("169.111.100.4")
	res = apply(t, a, Desired{Gateways: []Gateway{g}})
	if gr := res.Gateways[0]; len(gr.Kept) != 1 || gr.Kept[0] != IPv6 || !slices.Equal(gr.NextHops, addrs("169.111.100.4", "fd00:111::1")) {
		t.Errorf("result %+v", gr)
	}
	// Without next hops ever, only the blackhole: VIP traffic never takes
	// the main table.
	k2 := newFakeKernel()
	g.NextHops = nil
	apply(t, New(k2), Desired{Gateways: []Gateway{g}})
	for _, r := range k2.routes {
		if ownsTable(r.Table) && !r.Blackhole {
			t.Errorf("route without next hops: %s", r)
		}
	}
}

// TestDownNextHopsLeftOut: next hops found down leave the route in one
// replacement and keep their neighbour entries; a family whose every next
// hop is down keeps them all (never no next hop because of liveness); down
// addresses that are not next hops change nothing.
func TestDownNextHopsLeftOut(t *testing.T) {
	k := newFakeKernel()
	a := New(k)
	g := gatewayA()
	apply(t, a, Desired{Gateways: []Gateway{g}})
	k.ops = nil
	g.Down = addrs("169.111.100.2", "169.111.100.9")
	res := apply(t, a, Desired{Gateways: []Gateway{g}})
	want := []string{"replace route ipv4 table 50000 default metric 100 via 169.111.100.1 ifindex 2"}
	if !slices.Equal(k.ops, want) {
		t.Errorf("operations:\n%s\nwant:\n%s", strings.Join(k.ops, "\n"), strings.Join(want, "\n"))
	}
	gr := res.Gateways[0]
	if !slices.Equal(gr.NextHops, addrs("169.111.100.1", "fd00:111::1")) || !slices.Equal(gr.Down, addrs("169.111.100.2")) || len(gr.AllDown) != 0 {
		t.Errorf("result %+v: want .2 down and left out", gr)
	}

	// Every next hop of IPv4 down, and the only IPv6 one: all stay.
	k.ops = nil
	g.Down = addrs("169.111.100.1", "169.111.100.2", "fd00:111::1")
	res = apply(t, a, Desired{Gateways: []Gateway{g}})
	want = []string{"replace route ipv4 table 50000 default metric 100 via 169.111.100.1 ifindex 2 via 169.111.100.2 ifindex 2"}
	if !slices.Equal(k.ops, want) || !slices.Equal(k.ours(), stateA) {
		t.Errorf("operations:\n%s\nwant:\n%s", strings.Join(k.ops, "\n"), strings.Join(want, "\n"))
	}
	if gr := res.Gateways[0]; len(gr.Down) != 0 || !slices.Equal(gr.AllDown, Families) || len(gr.NextHops) != 3 {
		t.Errorf("result %+v: want both families all down, all kept", gr)
	}

	// Up again: back in the route; a removed next hop is flushed, not a
	// down one.
	k.ops = nil
	g.NextHops, g.Down = addrs("169.111.100.1", "169.111.100.3", "fd00:111::1"), addrs("169.111.100.3")
	res = apply(t, a, Desired{Gateways: []Gateway{g}})
	want = []string{"replace route ipv4 table 50000 default metric 100 via 169.111.100.1 ifindex 2", "flush 169.111.100.2"}
	if !slices.Equal(k.ops, want) {
		t.Errorf("operations:\n%s\nwant:\n%s", strings.Join(k.ops, "\n"), strings.Join(want, "\n"))
	}
	if gr := res.Gateways[0]; !slices.Equal(gr.Down, addrs("169.111.100.3")) || len(gr.AllDown) != 0 {
		t.Errorf("result %+v", gr)
	}
	g.Down = nil
	if res = apply(t, a, Desired{Gateways: []Gateway{g}}); len(res.Gateways[0].NextHops) != 3 || len(res.Gateways[0].Down) != 0 {
		t.Errorf("result %+v: want every next hop back", res.Gateways[0])
	}
}

func TestRemovingAVIPRemovesItsAddressThenItsRule(t *testing.T) {
	k := newFakeKernel()
	a := New(k)
	g := gatewayA()
	g.VIPs = append(g.VIPs, netip.MustParsePrefix("20.0.0.2/32"))
	apply(t, a, Desired{Gateways: []Gateway{g}})
	k.ops = nil
	apply(t, a, Desired{Gateways: []Gateway{gatewayA()}})
	want := []string{"del address 20.0.0.2/32 ifindex 1 proto 83", "del rule ipv4 pref 10200 from 20.0.0.2/32 lookup 50000 proto 83",
		"del rule ipv4 pref 10201 from 20.0.0.2/32 blackhole proto 83"}
	if !slices.Equal(k.ops, want) {
		t.Errorf("operations %q, want %q", k.ops, want)
	}
	// The last IPv6 VIP gone: its family's routes go too.
	g = gatewayA()
	g.VIPs = prefixes("20.0.0.1/32")
	k.ops = nil
	apply(t, a, Desired{Gateways: []Gateway{g}})
	if got := strings.Join(k.ops, "\n"); !strings.Contains(got, "del route ipv6 table 50000 default metric 100") ||
		!strings.Contains(got, "del route ipv6 table 50000 default metric 1000000") || !strings.Contains(got, "flush fd00:111::1") {
		t.Errorf("operations:\n%s", got)
	}
}

func TestAVIPMovingToAnotherGatewayAlwaysHasARule(t *testing.T) {
	k := newFakeKernel()
	a := New(k)
	apply(t, a, Desired{Gateways: []Gateway{gatewayA()}})
	k.ops = nil
	b := gatewayA()
	b.Name, b.Table = "sllb-b", 50001
	apply(t, a, Desired{Gateways: []Gateway{b}})
	add := slices.Index(k.ops, "add rule ipv4 pref 10200 from 20.0.0.1/32 lookup 50001 proto 83")
	del := slices.Index(k.ops, "del rule ipv4 pref 10200 from 20.0.0.1/32 lookup 50000 proto 83")
	if add < 0 || del < add {
		t.Errorf("the new rule must be added before the old one is deleted:\n%s", strings.Join(k.ops, "\n"))
	}
	for _, op := range k.ops {
		if strings.Contains(op, "address") {
			t.Errorf("the VIP's address was touched: %s", op)
		}
	}
}

func TestForeignConfigurationIsReportedNotOverwritten(t *testing.T) {
	k := newFakeKernel()
	foreignVIP := Address{LinkIndex: 1, Prefix: netip.MustParsePrefix("20.0.0.1/32")} // no marker
	atOurPriority := Rule{Family: IPv4, Priority: RulePriority, Src: netip.MustParsePrefix("10.0.0.0/8"), Table: 7, Plain: true}
	inOurTableWithoutProto := Rule{Family: IPv6, Priority: RulePriority, Src: netip.MustParsePrefix("2001:db8::9/128"), Table: 50000, Plain: true}
	shadowing := Rule{Family: IPv6, Priority: 100, Src: netip.MustParsePrefix("2001:db8::/64"), Table: 100, Plain: true}
	k.addrs = append(k.addrs, foreignVIP)
	k.rules = append(k.rules, atOurPriority, inOurTableWithoutProto, shadowing)
	res := apply(t, New(k), Desired{Gateways: []Gateway{gatewayA()}})
	want := []string{
		"VIP 20.0.0.1/32 of gateway sllb-a: 20.0.0.1/32 on lo is not sllbrd's (no IFA_PROTO 83); left as is",
		"VIP 2001:db8::1/128 of gateway sllb-a: rule ipv6 pref 100 from 2001:db8::/64 lookup 100 proto 0 comes before sllbrd's rules; left as is",
		"rule ipv4 pref 10200 from 10.0.0.0/8 lookup 7 proto 0 is at sllbrd's priority 10200 and not sllbrd's; left as is",
		"rule ipv6 pref 10200 from 2001:db8::9/128 lookup 50000 proto 0 is at sllbrd's priority 10200 and not sllbrd's; left as is",
	}
	if !slices.Equal(res.Conflicts, want) {
		t.Errorf("conflicts:\n%s\nwant:\n%s", strings.Join(res.Conflicts, "\n"), strings.Join(want, "\n"))
	}
	for _, op := range k.ops {
		if strings.HasPrefix(op, "del") || strings.Contains(op, "address 20.0.0.1/32") {
			t.Errorf("foreign configuration changed: %s", op)
		}
	}
	// The VIP held by someone else still works: its rule is there.
	if !slices.Equal(res.Gateways[0].VIPs, gatewayA().VIPs) {
		t.Errorf("VIPs in place %v", res.Gateways[0].VIPs)
	}
	// Removing everything leaves the foreign objects.
	apply(t, New(k), Desired{})
	if !slices.Contains(k.addrs, foreignVIP) || !slices.Contains(k.rules, atOurPriority) || !slices.Contains(k.rules, inOurTableWithoutProto) {
		t.Errorf("foreign objects removed")
	}
}

func TestNoInterfaceOnTheSubnet(t *testing.T) {
	k := newFakeKernel()
	k.addrs = k.addrs[:1] // only lo
	res, err := New(k).Apply(Desired{Gateways: []Gateway{gatewayA()}})
	if err == nil || !strings.Contains(err.Error(), "no interface holds an address in [169.111.100.0/24]") {
		t.Fatalf("error %v", err)
	}
	// The rest is applied: VIPs, rules and the blackholes (no leak through
	// the main table).
	if res.VIPCount() != 2 || len(res.Gateways[0].NextHops) != 0 {
		t.Errorf("result %+v", res)
	}
}

func TestAFailureDoesNotStopTheRest(t *testing.T) {
	k := newFakeKernel()
	boom := errors.New("boom")
	k.fail = func(op string) error {
		if strings.Contains(op, "rule ipv4") {
			return boom
		}
		return nil
	}
	res, err := New(k).Apply(Desired{Gateways: []Gateway{gatewayA()}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "add rule ipv4 pref 10200 from 20.0.0.1/32 lookup 50000") {
		t.Fatalf("error %v", err)
	}
	if !slices.Equal(res.Gateways[0].VIPs, prefixes("2001:db8::1/128")) {
		t.Errorf("VIPs in place %v, want only the IPv6 one", res.Gateways[0].VIPs)
	}
}

func TestValidate(t *testing.T) {
	mod := func(f func(*Gateway)) Desired {
		g := gatewayA()
		f(&g)
		return Desired{Gateways: []Gateway{g}}
	}
	for _, tc := range []struct {
		name string
		d    Desired
		want string
	}{
		{"no name", mod(func(g *Gateway) { g.Name = "" }), "no name"},
		{"table below", mod(func(g *Gateway) { g.Table = 254 }), "table 254 outside 50000-50999"},
		{"table above", mod(func(g *Gateway) { g.Table = 51000 }), "outside"},
		{"VIP not a host", mod(func(g *Gateway) { g.VIPs = prefixes("20.0.0.0/24") }), "not a unicast host prefix"},
		{"VIP mapped", mod(func(g *Gateway) { g.VIPs = prefixes("::ffff:20.0.0.1/128") }), "not a unicast host prefix"},
		{"VIP loopback", mod(func(g *Gateway) { g.VIPs = prefixes("127.0.0.2/32") }), "not a unicast host prefix"},
		{"next hop outside", mod(func(g *Gateway) { g.NextHops = addrs("169.111.101.1") }), "in none of the subnets"},
		{"next hop unspecified", mod(func(g *Gateway) { g.NextHops = addrs("::") }), "not a unicast address"},
		{"subnet not masked", mod(func(g *Gateway) { g.Subnets = prefixes("169.111.100.1/24") }), "not a network prefix"},
		{"same name", Desired{Gateways: []Gateway{gatewayA(), func() Gateway { g := gatewayA(); g.Table++; g.VIPs = nil; return g }()}}, "listed twice"},
		{"same table", Desired{Gateways: []Gateway{gatewayA(), func() Gateway { g := gatewayA(); g.Name = "b"; g.VIPs = nil; return g }()}}, "table 50000 used by another gateway"},
		{"same VIP", Desired{Gateways: []Gateway{gatewayA(), func() Gateway { g := gatewayA(); g.Name, g.Table = "b", 50001; return g }()}}, `VIP 20.0.0.1/32 in gateways "sllb-a" and "b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newFakeKernel()
			_, err := New(k).Apply(tc.d)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if len(k.ops) != 0 {
				t.Errorf("an invalid configuration changed the kernel: %v", k.ops)
			}
		})
	}
	if err := (Desired{Gateways: []Gateway{gatewayA()}}).Validate(); err != nil {
		t.Errorf("valid: %v", err)
	}
}
