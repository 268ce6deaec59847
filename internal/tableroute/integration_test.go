package tableroute

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// TestIntegrationRoutesAndNeighbours, in a fresh network namespace (a veth pair, both ends in it): in both
// families, a table's default route replaced from one hop to two and to a
// blackhole is listed as written after each step (and nothing else in the
// table), deleted by its key, and a neighbour entry is flushed (an absent
// one is not an error).
func TestIntegrationRoutesAndNeighbours(t *testing.T) {
	ns, fd := netns.New(t, "tableroute")
	for _, args := range []string{"link add d0 type veth peer name d1", "link set d1 up", "link set d0 up", "addr add 10.0.0.10/24 dev d0",
		"addr add fd00::10/64 dev d0 nodad"} {
		netns.Run(t, append([]string{"ip", "-n", ns}, strings.Fields(args)...)...)
	}
	rt, err := rtnetlink.Dial(&netlink.Config{NetNS: fd})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ifindex := linkIndex(t, rt, "d0")
	const table = 50001
	for _, fam := range Families {
		gw := map[Family][]netip.Addr{IPv4: {gw2, gw1}, IPv6: {netip.MustParseAddr("fd00::2"), gw6}}[fam]
		steps := []Route{
			{Family: fam, Table: table, Metric: 100, Hops: []Hop{{Gateway: gw[0], IfIndex: ifindex}}},
			{Family: fam, Table: table, Metric: 100, Hops: []Hop{{Gateway: gw[0], IfIndex: ifindex}, {Gateway: gw[1], IfIndex: ifindex}}},
			{Family: fam, Table: table, Metric: 100, Blackhole: true},
		}
		for _, want := range steps {
			if err := Replace(rt, want, 83); err != nil {
				t.Fatalf("Replace(%s): %v", want, err)
			}
			SortHops(want.Hops)
			if got := inTable(t, rt, fam, table); len(got) != 1 || !got[0].Equal(want) {
				t.Fatalf("after Replace(%s) the table holds %v", want, got)
			}
		}
		if err := Delete(rt, Route{Family: fam, Table: table, Metric: 100}); err != nil {
			t.Fatal(err)
		}
		if got := inTable(t, rt, fam, table); len(got) != 0 {
			t.Fatalf("after Delete the table holds %v", got)
		}
		netns.Run(t, "ip", "-n", ns, "neigh", "replace", gw[0].String(), "lladdr", "02:00:00:00:00:01", "dev", "d0")
		for range 2 { // the second finds nothing: not an error
			if err := DeleteNeighbour(rt, ifindex, gw[0]); err != nil {
				t.Fatalf("DeleteNeighbour(%v): %v", gw[0], err)
			}
		}
		if out := netns.Run(t, "ip", "-n", ns, "neigh", "show", "dev", "d0"); strings.Contains(out, gw[0].String()+" ") {
			t.Errorf("neighbour %v still there: %s", gw[0], out)
		}
	}
}

func linkIndex(t *testing.T, rt *rtnetlink.Conn, name string) uint32 {
	t.Helper()
	links, err := rt.Link.List()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(links, func(l rtnetlink.LinkMessage) bool { return l.Attributes != nil && l.Attributes.Name == name })
	if i < 0 {
		t.Fatalf("no link %s", name)
	}
	return links[i].Index
}

func inTable(t *testing.T, rt *rtnetlink.Conn, fam Family, table uint32) []Route {
	t.Helper()
	all, err := List(rt)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(all, func(r Route) bool { return r.Family != fam || r.Table != table })
}
