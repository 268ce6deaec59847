package fastpath

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"

	"github.com/sllbrd/sllbrd/model"
)

// maxName bounds every name (the kernel's limit is 255 bytes); a longer
// one keeps its start and ends in a digest of the whole.
const maxName = 200

func short(name string) string {
	if len(name) <= maxName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:maxName-17] + "~" + hex.EncodeToString(sum[:8])
}

func protoName(p model.Protocol) string {
	switch p {
	case model.ProtoTCP:
		return "tcp"
	case model.ProtoUDP:
		return "udp"
	case model.ProtoSCTP:
		return "sctp"
	case model.ProtoICMP, model.ProtoICMPv6:
		return "echo"
	}
	return fmt.Sprint(uint8(p))
}

func vipChainName(fam family, vip netip.Addr) string { return fmt.Sprintf("v%d-%s", fam, vip) }

func dispatchChainName(fam family, vip netip.Addr, p model.Protocol) string {
	return fmt.Sprintf("d%d-%s-%s", fam, vip, protoName(p))
}

func routeChainName(fam family, p model.Protocol, route string) string {
	return short(fmt.Sprintf("r%d-%s-%s", fam, protoName(p), route))
}

func routeCounterName(route, service string) string { return short("r-" + route + "@" + service) }

// mapName names a Service's map of m entries: a new size is a new map
// (the kernel sizes a map's hash table once).
func mapName(fam family, service string, m int) string {
	return fmt.Sprintf("m%d-%s-%d", fam, service, m)
}

// endpointMapName names a Service's map from an endpoint's mark to its
// chain, of size elements at most (nft.MarkMapSize): a new size is a new
// map, as for mapName.
func endpointMapName(fam family, service string, size uint32) string {
	return short(fmt.Sprintf("em%d-%s-%d", fam, service, size))
}

func endpointChainName(fam family, service string, id int) string {
	return fmt.Sprintf("e%d-%s-%d", fam, service, id)
}

func endpointCounterName(service string, id int, addr netip.Addr) string {
	return fmt.Sprintf("e-%s-%d-%s", service, id, addr)
}

func sourceSetName(fam family, route string) string { return short(fmt.Sprintf("s%d-%s", fam, route)) }

func portSetName(which, route string) string { return short(which + "-" + route) }
