package translate

import (
	"net/netip"
	"time"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/model"
)

func translateRouters(gw model.Gateway, routers []*v1alpha1.GatewayRouter, secrets secretIndex, ps *problems) []model.Router {
	var out []model.Router
	byAddr := map[netip.Addr]string{} // one router per address: one BGP peer, one BFD session
	for _, r := range inScope(gw, routers) {
		if r.Labels[kube.LabelServiceProxyName] != gw.Name {
			continue // another Gateway's router
		}
		var faults problems
		router := translateRouter(r, secrets, &faults)
		if prev, dup := byAddr[router.Address]; dup && len(faults) == 0 {
			faults.add(KindGatewayRouter, r, "spec.address", "%s is already the address of GatewayRouter %s", router.Address, prev)
		}
		*ps = append(*ps, faults...)
		if len(faults) == 0 {
			byAddr[router.Address] = router.Name
			out = append(out, router)
		}
	}
	return out
}

// translateRouter checks every field of r, reporting each fault; the router
// is usable only if none was reported.
func translateRouter(r *v1alpha1.GatewayRouter, secrets secretIndex, ps *problems) model.Router {
	spec := &r.Spec
	router := model.Router{Name: qualified(r), Interface: spec.Interface}
	addr, err := netip.ParseAddr(spec.Address)
	switch {
	case err != nil:
		ps.add(KindGatewayRouter, r, "spec.address", "%v", err)
	case addr.Zone() != "":
		ps.add(KindGatewayRouter, r, "spec.address", "%s: must not have a zone (spec.interface gives it)", addr)
	}
	router.Address = addr
	if spec.Interface == "" || len(spec.Interface) > 15 {
		ps.add(KindGatewayRouter, r, "spec.interface", "%q is not an interface name (1..15 characters)", spec.Interface)
	}
	var bfd *v1alpha1.BFDSpec
	var bfdField string
	switch {
	case (spec.BGP == nil) == (spec.Static == nil):
		ps.add(KindGatewayRouter, r, "spec", "exactly one of bgp and static must be set")
	case spec.BGP != nil:
		router.BGP = translateBGP(r, spec.BGP, ps)
		translateBGPProtection(r, router, secrets, ps)
		translateBGPAttributes(r, router.BGP, ps)
		bfd, bfdField = spec.BGP.BFD, "spec.bgp.bfd"
	default:
		bfd, bfdField = spec.Static.BFD, "spec.static.bfd"
	}
	if bfd != nil {
		router.BFD = translateBFD(r, bfdField, bfd, ps)
		checkBFDAddresses(r, bfdField, router, ps)
	}
	return router
}

func isIPv6LinkLocal(a netip.Addr) bool { return a.Is6() && !a.Is4In6() && a.IsLinkLocalUnicast() }

// checkBFDAddresses applies the rules that tie BFD to the router: the local
// address is of the router's family; multihop needs BGP (a static next hop
// is directly connected) and addresses that are not IPv6 link-local.
func checkBFDAddresses(r *v1alpha1.GatewayRouter, field string, router model.Router, ps *problems) {
	local := router.BFD.LocalAddress
	if local.IsValid() && router.Address.IsValid() && local.Is4() != router.Address.Is4() {
		ps.add(KindGatewayRouter, r, field+".localAddress", "%s is not of the address family of spec.address %s", local, router.Address)
	}
	if !router.BFD.Multihop {
		return
	}
	switch {
	case router.BGP == nil:
		ps.add(KindGatewayRouter, r, field+".multihop", "multihop BFD needs bgp: a static next hop is directly connected")
	case isIPv6LinkLocal(router.Address) || isIPv6LinkLocal(local):
		// A multihop session is not tied to an interface, which an IPv6
		// link-local address needs (IPv4 169.254/16 is routed in practice).
		ps.add(KindGatewayRouter, r, field+".multihop", "multihop BFD needs addresses that are not IPv6 link-local")
	}
}

func translateBGP(r *v1alpha1.GatewayRouter, b *v1alpha1.BGPSpec, ps *problems) *model.BGP {
	out := &model.BGP{LocalASN: b.LocalASN, RemoteASN: b.RemoteASN}
	if b.LocalASN == 0 {
		ps.add(KindGatewayRouter, r, "spec.bgp.localASN", "must be in 1..4294967295")
	}
	if b.RemoteASN == 0 {
		ps.add(KindGatewayRouter, r, "spec.bgp.remoteASN", "must be in 1..4294967295")
	}
	out.HoldTime = parseDuration(r, "spec.bgp.holdTime", b.HoldTime, v1alpha1.DefaultBGPHoldTime,
		v1alpha1.MinBGPHoldTime, v1alpha1.MaxBGPHoldTime, ps)
	out.LocalPort = parsePort(r, "spec.bgp.localPort", b.LocalPort, ps)
	out.RemotePort = parsePort(r, "spec.bgp.remotePort", b.RemotePort, ps)
	return out
}

func translateBFD(r *v1alpha1.GatewayRouter, field string, b *v1alpha1.BFDSpec, ps *problems) model.BFD {
	out := model.BFD{Enabled: b.Switch, Multiplier: v1alpha1.DefaultBFDMultiplier}
	out.MinTx = parseDuration(r, field+".minTx", b.MinTx, v1alpha1.DefaultBFDMinTx,
		v1alpha1.MinBFDInterval, v1alpha1.MaxBFDInterval, ps)
	out.MinRx = parseDuration(r, field+".minRx", b.MinRx, v1alpha1.DefaultBFDMinRx,
		v1alpha1.MinBFDInterval, v1alpha1.MaxBFDInterval, ps)
	switch m := b.Multiplier; {
	case m == 0:
	case m < v1alpha1.MinBFDMultiplier || m > v1alpha1.MaxBFDMultiplier:
		ps.add(KindGatewayRouter, r, field+".multiplier", "%d is not in %d..%d",
			m, v1alpha1.MinBFDMultiplier, v1alpha1.MaxBFDMultiplier)
	default:
		out.Multiplier = uint8(m)
	}
	out.Multihop = b.Multihop
	if b.LocalAddress != "" {
		a, err := netip.ParseAddr(b.LocalAddress)
		switch {
		case err != nil:
			ps.add(KindGatewayRouter, r, field+".localAddress", "%v", err)
		case a.Zone() != "":
			ps.add(KindGatewayRouter, r, field+".localAddress", "%s: must not have a zone (spec.interface gives it)", a)
		case a.IsUnspecified() || a.IsMulticast():
			ps.add(KindGatewayRouter, r, field+".localAddress", "%s is not a unicast address", a)
		default:
			out.LocalAddress = a.Unmap()
		}
	}
	return out
}

// parseDuration parses a duration field, empty meaning def, within [lo, hi].
func parseDuration(r *v1alpha1.GatewayRouter, field, s, def, lo, hi string, ps *problems) time.Duration {
	if s == "" {
		s = def
	}
	d, err := time.ParseDuration(s)
	minD, _ := time.ParseDuration(lo)
	maxD, _ := time.ParseDuration(hi)
	switch {
	case err != nil:
		ps.add(KindGatewayRouter, r, field, "%v", err)
	case d < minD || d > maxD:
		ps.add(KindGatewayRouter, r, field, "%s is not between %s and %s", s, lo, hi)
	}
	return d
}

// parsePort checks a port field, zero meaning the BGP port 179.
func parsePort(r *v1alpha1.GatewayRouter, field string, p int32, ps *problems) uint16 {
	switch {
	case p == 0:
		return v1alpha1.DefaultBGPPort
	case p < 1 || p > 65535:
		ps.add(KindGatewayRouter, r, field, "%d is not in 1..65535", p)
		return 0
	}
	return uint16(p)
}
