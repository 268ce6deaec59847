package bgp

import (
	"net"
	"net/netip"
)

// localAddrFunc finds our address for talking to peer over iface.
type localAddrFunc func(iface string, peer netip.Addr) netip.Addr

// interfaceLocalAddr returns the address of iface (of every interface when
// iface is "") whose prefix contains peer, else the first address of peer's
// family (for IPv6 preferring non-link-local unless peer is link-local),
// else the zero Addr (GoBGP then binds the wildcard address).
//
// The speaker binds this address explicitly when a router has a local
// port: a wildcard bind of [::]:port (dual-stack) would collide with
// 0.0.0.0:port of an IPv4 session using the same port.
func interfaceLocalAddr(iface string, peer netip.Addr) netip.Addr {
	var prefixes []netip.Prefix
	if iface != "" {
		ifc, err := net.InterfaceByName(iface)
		if err != nil {
			return netip.Addr{}
		}
		prefixes = ifacePrefixes(ifc)
	} else if ifs, err := net.Interfaces(); err == nil {
		for i := range ifs {
			prefixes = append(prefixes, ifacePrefixes(&ifs[i])...)
		}
	}
	return pickLocalAddr(prefixes, peer)
}

func ifacePrefixes(ifc *net.Interface) []netip.Prefix {
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ip, ok := netip.AddrFromSlice(n.IP)
			ones, _ := n.Mask.Size()
			if ok {
				ip = ip.Unmap()
				out = append(out, netip.PrefixFrom(ip, ones))
			}
		}
	}
	return out
}

// pickLocalAddr is the pure part of interfaceLocalAddr.
func pickLocalAddr(prefixes []netip.Prefix, peer netip.Addr) netip.Addr {
	peer = peer.WithZone("")
	for _, p := range prefixes {
		if p.Contains(peer) {
			return p.Addr()
		}
	}
	var fallback netip.Addr
	for _, p := range prefixes {
		a := p.Addr()
		if a.Is4() != peer.Is4() || a.IsLoopback() {
			continue
		}
		if a.IsLinkLocalUnicast() == peer.IsLinkLocalUnicast() {
			return a
		}
		if !fallback.IsValid() {
			fallback = a
		}
	}
	return fallback
}
