package targetpod

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// Next returns the annotation value the controller writes on a pod that
// must hold want (tables unset), given the pod's current value: every
// Gateway already in current keeps its table, a new one gets the lowest
// free table; the generation increases only when the content changes.
// An empty want gives "" (the annotation is removed). changed is false when
// current is already right.
func Next(current string, want []Gateway) (value string, changed bool, err error) {
	if len(want) == 0 {
		return "", current != "", nil
	}
	cur, curErr := ParseDesired(current)
	next := Desired{Version: SchemaVersion, Generation: cur.Generation, Gateways: normalize(want)}
	if err := allocateTables(next.Gateways, cur.Gateways); err != nil {
		return current, false, err
	}
	if curErr == nil && (Desired{Gateways: cur.Gateways}).Marshal() == (Desired{Gateways: next.Gateways}).Marshal() {
		return current, false, nil
	}
	next.Generation++
	return next.Marshal(), true, nil
}

// normalize sorts gateways by name and their lists, without duplicates,
// so that equal content marshals equally.
func normalize(gws []Gateway) []Gateway {
	out := slices.Clone(gws)
	slices.SortFunc(out, func(a, b Gateway) int { return cmp.Compare(a.Name, b.Name) })
	for i := range out {
		g := &out[i]
		g.Subnets = sortedPrefixes(g.Subnets)
		g.VIPs = sortedPrefixes(g.VIPs)
		g.NextHops.IPv4 = sortedAddrs(g.NextHops.IPv4)
		g.NextHops.IPv6 = sortedAddrs(g.NextHops.IPv6)
	}
	return out
}

func sortedPrefixes(p []netip.Prefix) []netip.Prefix {
	out := slices.Clone(p)
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

func sortedAddrs(a []netip.Addr) []netip.Addr {
	out := slices.Clone(a)
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// allocateTables sets the table of each of gws: the one it has in
// current, else the lowest free one.
func allocateTables(gws, current []Gateway) error {
	used := map[uint32]bool{}
	for i := range gws {
		gws[i].Table = 0
		for _, c := range current {
			if c.Name == gws[i].Name && !used[c.Table] {
				gws[i].Table = c.Table
				used[c.Table] = true
			}
		}
	}
	next := uint32(targetnet.TableMin)
	for i := range gws {
		if gws[i].Table != 0 {
			continue
		}
		for used[next] {
			next++
		}
		if next > targetnet.TableMax {
			return fmt.Errorf("more than %d Gateways for one pod: no routing table left", targetnet.TableMax-targetnet.TableMin+1)
		}
		gws[i].Table = next
		used[next] = true
	}
	return nil
}
