package bgp

import (
	"encoding/binary"
	"hash/fnv"
	"net"
	"net/netip"
	"os"
)

// DeriveRouterID picks a BGP identifier deterministically:
//
//  1. the first IPv4 address in addrs that is not unspecified, loopback or
//     multicast (link-local 169.254/16 is allowed: it is unique on its link);
//  2. else a 32-bit FNV-1a hash of the first global unicast IPv6 address
//     (not loopback, link-local or multicast), so IPv6-only pods get an id;
//  3. else a 32-bit FNV-1a hash of name (the pod name);
//
// A hash that lands on 0.0.0.0 or 255.255.255.255 (invalid identifiers) is
// replaced by 0.0.0.1. It returns the zero Addr only when every input is
// empty.
func DeriveRouterID(addrs []netip.Addr, name string) netip.Addr {
	for _, a := range addrs {
		a = a.Unmap()
		if a.Is4() && !a.IsUnspecified() && !a.IsLoopback() && !a.IsMulticast() {
			return a
		}
	}
	for _, a := range addrs {
		if a.Is6() && !a.Is4In6() && a.IsGlobalUnicast() && !a.IsLinkLocalUnicast() {
			return hashedRouterID(a.AsSlice())
		}
	}
	if name != "" {
		return hashedRouterID([]byte(name))
	}
	return netip.Addr{}
}

func hashedRouterID(b []byte) netip.Addr {
	h := fnv.New32a()
	h.Write(b)
	v := h.Sum32()
	if v == 0 || v == 0xffffffff {
		v = 1
	}
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], v)
	return netip.AddrFrom4(out)
}

// LocalRouterID applies DeriveRouterID to the addresses of this network
// namespace's interfaces (in interface index order) and the host name,
// which is the pod name in Kubernetes.
func LocalRouterID() netip.Addr {
	name, _ := os.Hostname()
	return DeriveRouterID(interfaceAddrs(), name)
}

func interfaceAddrs() []netip.Addr {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					out = append(out, ip.Unmap())
				}
			}
		}
	}
	return out
}
