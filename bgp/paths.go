package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/apiutil"
	"github.com/osrg/gobgp/v3/pkg/packet/bgp"
)

// vipPath builds the GoBGP path announcing vip as a host route with an
// unspecified next hop, which GoBGP replaces per session by the local
// address (next hop self).
func vipPath(vip netip.Addr) (*api.Path, error) {
	origin := bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP)
	if vip.Is4() {
		nlri := bgp.NewIPAddrPrefix(32, vip.String())
		return apiutil.NewPath(nlri, false,
			[]bgp.PathAttributeInterface{origin, bgp.NewPathAttributeNextHop("0.0.0.0")}, time.Now())
	}
	nlri := bgp.NewIPv6AddrPrefix(128, vip.String())
	mp := bgp.NewPathAttributeMpReachNLRI("::", []bgp.AddrPrefixInterface{nlri})
	return apiutil.NewPath(nlri, false, []bgp.PathAttributeInterface{origin, mp}, time.Now())
}

// normalizeVIPs unmaps, validates and de-duplicates vips.
func normalizeVIPs(vips []netip.Addr) (map[netip.Addr]bool, error) {
	out := make(map[netip.Addr]bool, len(vips))
	var bad []netip.Addr
	for _, v := range vips {
		v = v.Unmap()
		if !v.IsValid() || v.IsUnspecified() || v.IsMulticast() || v.Zone() != "" {
			bad = append(bad, v)
			continue
		}
		out[v] = true
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("invalid VIPs ignored: %v", bad)
	}
	return out, nil
}

// diffVIPs returns the VIPs to add and to withdraw, sorted.
func diffVIPs(have map[netip.Addr][]byte, want map[netip.Addr]bool) (add, del []netip.Addr) {
	for v := range want {
		if _, ok := have[v]; !ok {
			add = append(add, v)
		}
	}
	for v := range have {
		if !want[v] {
			del = append(del, v)
		}
	}
	slices.SortFunc(add, netip.Addr.Compare)
	slices.SortFunc(del, netip.Addr.Compare)
	return add, del
}

// learnedDefault is one default route received from a peer.
type learnedDefault struct {
	peer    netip.Addr
	nextHop netip.Addr
}

// learnedDefaults extracts the peer-learned default routes of a destination
// listed from the global RIB. Local paths and withdrawals are skipped.
func learnedDefaults(d *api.Destination) []learnedDefault {
	var out []learnedDefault
	for _, p := range d.GetPaths() {
		if p.GetIsWithdraw() {
			continue
		}
		peer, err := netip.ParseAddr(p.GetNeighborIp())
		if err != nil || peer.IsUnspecified() {
			continue
		}
		nlri, err := apiutil.GetNativeNlri(p)
		if err != nil {
			continue
		}
		pfx, err := netip.ParsePrefix(nlri.String())
		if err != nil || pfx.Bits() != 0 {
			continue
		}
		if nh, ok := pathNextHop(p); ok {
			out = append(out, learnedDefault{peer: peer.Unmap(), nextHop: nh})
		}
	}
	return out
}

// pathNextHop returns the NEXT_HOP, else the MP_REACH global next hop,
// else its link-local next hop.
func pathNextHop(p *api.Path) (netip.Addr, bool) {
	attrs, err := apiutil.GetNativePathAttributes(p)
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range attrs {
		switch a := a.(type) {
		case *bgp.PathAttributeNextHop:
			ip, ok := netip.AddrFromSlice(a.Value)
			return ip.Unmap(), ok
		case *bgp.PathAttributeMpReachNLRI:
			global, ok := netip.AddrFromSlice(a.Nexthop)
			if ok && !global.IsUnspecified() {
				return global.Unmap(), true
			}
			if ll, llOK := netip.AddrFromSlice(a.LinkLocalNexthop); llOK {
				return ll, true
			}
			return global, ok
		}
	}
	return netip.Addr{}, false
}
