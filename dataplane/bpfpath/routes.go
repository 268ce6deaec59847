package bpfpath

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/sllbrd/sllbrd/model"
)

// The program's limits (bpf/routes.h); doc.go says what lies beyond them.
const (
	// MaxRoutesPerVIP is how many routes a VIP's route set holds. With
	// more, the first MaxRoutesPerVIP-1 are matched and a packet that
	// reaches the next place is punted (StatusPuntLimit).
	MaxRoutesPerVIP = len(ingressRouteSet{}.Routes)
	// MaxSourceCIDRs is how many source CIDRs of the VIP's family a route
	// may have, and MaxPortRanges how many source port ranges, and
	// destination port ranges, after merging. A route with more is punted
	// at its place.
	MaxSourceCIDRs = len(ingressRoute{}.Src)
	MaxPortRanges  = len(ingressRoute{}.Sport)
	// maxRank is the last route index a result can carry (routeNone is
	// none): routes beyond it are punted at their place.
	maxRank = routeNone - 1
)

// Bits and flags of bpf/routes.h.
const (
	protoBitTCP  = 1
	protoBitUDP  = 2
	protoBitSCTP = 4

	routeAnySource = 1
	routeOverLimit = 2

	setPuntMappedSource = 1

	tableNone = ^uint32(0) // bpf/tables.h's TABLE_NONE
)

// vipRoutes is one VIP's route set as the program reads it.
type vipRoutes struct {
	key ingressVipKey
	set ingressRouteSet
}

// routeSets builds every VIP's route set from the routes in precedence
// order. hasService says whether the input has a Service (a route to one
// it lacks gets TABLE_NONE: no_endpoint); tableOf gives a Service's table
// key of a family (false: the Service is beyond MaxServices). It returns
// what it had to punt, as fastpath.Program.Userspace does, one line per
// route and cause.
func routeSets(routes []model.Route, tableOf func(service string, fam uint8) (uint32, bool), hasService func(string) bool) (map[netip.Addr]*vipRoutes, []string) {
	out := map[netip.Addr]*vipRoutes{}
	var punted []string
	punt := func(format string, args ...any) {
		if why := fmt.Sprintf(format, args...); !slices.Contains(punted, why) {
			punted = append(punted, why)
		}
	}
	ranks := map[netip.Addr][]int{} // VIP -> its routes' ranks, in order
	var vips []netip.Addr
	for rank, r := range routes {
		for _, d := range r.Destinations {
			vip := d.Addr().Unmap()
			if _, ok := ranks[vip]; !ok {
				vips = append(vips, vip)
			}
			if !slices.Contains(ranks[vip], rank) {
				ranks[vip] = append(ranks[vip], rank)
			}
		}
	}
	for _, vip := range vips {
		v := &vipRoutes{key: vipKeyOf(vip)}
		fam := uint8(v.key.Family)
		for i, rank := range ranks[vip] {
			r := &routes[rank]
			if fam == 6 && len(r.Sources) > 0 {
				v.set.Flags |= setPuntMappedSource
			}
			if i == MaxRoutesPerVIP-1 && len(ranks[vip]) > MaxRoutesPerVIP {
				// A marker at this place punts the packets of the
				// protocols the routes from here on match, and echoes.
				var protos uint8
				for _, later := range ranks[vip][i:] {
					for _, p := range routes[later].Protocols {
						protos |= protoBit(p)
					}
				}
				v.set.Routes[i] = ingressRoute{Rank: uint32(min(rank, maxRank)), Protos: protos, Flags: routeOverLimit}
				v.set.RouteCount = uint32(i + 1)
				punt("VIP %s: more than %d routes: from route %s on, to userspace", vip, MaxRoutesPerVIP, r.Name)
				continue // the flags of the later routes still count
			}
			if i >= MaxRoutesPerVIP {
				continue
			}
			rt, why := routeOf(r, rank, fam, tableOf, hasService)
			switch {
			case why != "":
				punt("route %s, VIP %s: %s: to userspace from its place", r.Name, vip, why)
			case rt.ByteProtos != 0:
				punt("route %s, VIP %s: byte matches are not evaluated yet: its matching packets of their protocols to userspace", r.Name, vip)
			}
			v.set.Routes[i] = rt
			v.set.RouteCount = uint32(i + 1)
		}
		out[vip] = v
	}
	return out, punted
}

// routeOf is route r (at rank) as a route of a VIP of family fam, and why
// it is over a limit ("" when it is not). A route over a limit keeps its
// protocols and, when they fit, its destination ports: the program punts
// the packets that pass those at its place.
func routeOf(r *model.Route, rank int, fam uint8, tableOf func(string, uint8) (uint32, bool), hasService func(string) bool) (ingressRoute, string) {
	rt := ingressRoute{Rank: min(uint32(rank), maxRank), Table: tableNone}
	for _, p := range r.Protocols {
		rt.Protos |= protoBit(p)
	}
	for _, m := range r.ByteMatches {
		rt.ByteProtos |= protoBit(m.Protocol)
	}
	var over []string
	if len(r.DestinationPorts) > MaxPortRanges {
		over = append(over, fmt.Sprintf("%d destination port ranges, more than %d", len(r.DestinationPorts), MaxPortRanges))
	} else {
		rt.DportCount = ports(&rt.Dport, r.DestinationPorts)
	}
	if len(r.SourcePorts) > MaxPortRanges {
		over = append(over, fmt.Sprintf("%d source port ranges, more than %d", len(r.SourcePorts), MaxPortRanges))
	} else {
		rt.SportCount = ports(&rt.Sport, r.SourcePorts)
	}
	if rank > maxRank {
		over = append(over, fmt.Sprintf("its index %d is beyond %d", rank, maxRank))
	}
	if hasService(r.Service) {
		t, ok := tableOf(r.Service, fam)
		if !ok {
			over = append(over, fmt.Sprintf("its Service %s is beyond the program's Services (Options.MaxServices)", r.Service))
		}
		rt.Table = t
	}
	var cidrs []netip.Prefix
	anySource := len(r.Sources) == 0
	for _, p := range r.Sources {
		if (p.Addr().Is4() && fam == 4) || (p.Addr().Is6() && fam == 6) {
			anySource = anySource || p.Bits() == 0
			cidrs = append(cidrs, p)
		}
	}
	switch {
	case anySource:
		rt.Flags |= routeAnySource
	case len(cidrs) > MaxSourceCIDRs:
		over = append(over, fmt.Sprintf("%d source CIDRs of its family, more than %d", len(cidrs), MaxSourceCIDRs))
	default:
		for i, p := range cidrs {
			rt.Src[i] = cidrOf(p)
		}
		rt.SrcCount = uint8(len(cidrs))
	}
	if len(over) > 0 {
		return ingressRoute{Rank: rt.Rank, Protos: rt.Protos, Flags: routeOverLimit, DportCount: rt.DportCount, Dport: rt.Dport}, strings.Join(over, ", ")
	}
	return rt, ""
}

// ports copies ranges (at most MaxPortRanges) into out and returns how
// many.
func ports(out *[MaxPortRanges]ingressPortRange, ranges []model.PortRange) uint8 {
	for i, p := range ranges {
		out[i] = ingressPortRange{From: p.From, To: p.To}
	}
	return uint8(len(ranges))
}

func protoBit(p model.Protocol) uint8 {
	switch p {
	case model.ProtoTCP:
		return protoBitTCP
	case model.ProtoUDP:
		return protoBitUDP
	case model.ProtoSCTP:
		return protoBitSCTP
	}
	return 0
}

// words returns an address's bytes as the program's 32-bit words hold
// them: in memory order, read in this machine's byte order (IPv4 in word
// 0).
func words(a netip.Addr) [4]uint32 {
	var w [4]uint32
	b := a.AsSlice()
	for i := 0; i < len(b); i += 4 {
		w[i/4] = binary.NativeEndian.Uint32(b[i:])
	}
	return w
}

func vipKeyOf(vip netip.Addr) ingressVipKey {
	fam := uint32(6)
	if vip.Is4() {
		fam = 4
	}
	return ingressVipKey{Addr: words(vip), Family: fam}
}

// cidrOf is p as the program matches it: source & mask == addr.
func cidrOf(p netip.Prefix) ingressCidr {
	p = p.Masked()
	mask := make([]byte, p.Addr().BitLen()/8)
	for i := range p.Bits() {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	var m netip.Addr
	if len(mask) == 4 {
		m = netip.AddrFrom4([4]byte(mask))
	} else {
		m = netip.AddrFrom16([16]byte(mask))
	}
	return ingressCidr{Addr: words(p.Addr()), Mask: words(m)}
}
