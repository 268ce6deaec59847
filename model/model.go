package model

import (
	"net/netip"
	"time"
)

// Protocol is an IANA IP protocol number.
type Protocol uint8

// The protocols sllbrd classifies and balances.
const (
	ProtoICMP   Protocol = 1
	ProtoTCP    Protocol = 6
	ProtoUDP    Protocol = 17
	ProtoICMPv6 Protocol = 58
	ProtoSCTP   Protocol = 132
)

// String returns the protocol's conventional lower-case name.
func (p Protocol) String() string {
	switch p {
	case ProtoICMP:
		return "icmp"
	case ProtoTCP:
		return "tcp"
	case ProtoUDP:
		return "udp"
	case ProtoICMPv6:
		return "icmpv6"
	case ProtoSCTP:
		return "sctp"
	}
	return "proto-" + itoa(int(p))
}

// PortRange is an inclusive range of ports; a single port has From == To.
type PortRange struct {
	From, To uint16
}

// Contains reports whether p lies in the range.
func (r PortRange) Contains(p uint16) bool { return r.From <= p && p <= r.To }

// AnyPort matches every port.
var AnyPort = PortRange{From: 0, To: 65535}

// ByteMatch is one NFQLB-style statement `proto[offset:size] & mask = value`:
// Size bytes (1, 2 or 4) read big-endian at Offset from the start of the
// transport header of a packet of protocol Protocol, masked with Mask, must
// equal Value. Value&^Mask is always zero.
type ByteMatch struct {
	Protocol Protocol
	Offset   uint16
	Size     uint8
	Mask     uint32
	Value    uint32
}

// Route is one L34Route: which packets go to which Service.
// Empty Sources, SourcePorts or DestinationPorts mean "any"; Protocols is
// never empty; every Destination is a single address (/32 or /128).
type Route struct {
	Name             string // namespace/name of the L34Route
	Service          string // name of the backend Service (same namespace)
	Priority         int32  // >= 1; highest wins
	Destinations     []netip.Prefix
	Sources          []netip.Prefix
	SourcePorts      []PortRange
	DestinationPorts []PortRange
	Protocols        []Protocol
	ByteMatches      []ByteMatch
}

// Endpoint is one address of a target of a Service. A dual-stack target
// appears twice, once per address family, with the same ID; the pair shares
// one fwmark. IPv4 flows are balanced over IPv4 endpoints only, IPv6 flows
// over IPv6 endpoints only.
type Endpoint struct {
	ID    int        // identifier, 0 <= ID < Service.MaxEndpoints, unique per address family in the Service
	Addr  netip.Addr // where packets are routed (next hop on a Gateway network)
	Ready bool       // only ready endpoints receive new flows
}

// Service is a set of endpoints balanced with one Maglev table.
type Service struct {
	Name         string // name of the Kubernetes Service (namespace is the Gateway's)
	MaxEndpoints int    // N: identifiers are 0..N-1
	// SCTPHashPorts selects the SCTP flow key: true (the default) hashes only
	// the ports so that a multihomed association reaches one target whatever
	// addresses it uses.
	SCTPHashPorts bool
	// Liveness says how each SLLBR checks the endpoints itself; the zero
	// value is off. Only the prober reads it: the Maglev table and the
	// fwmarks depend on Endpoints alone, so a change of Liveness alone
	// rebuilds neither.
	Liveness  Liveness
	Endpoints []Endpoint
}

// Network is an interface of the LB towards the targets.
type Network struct {
	Name      string // NetworkAttachmentDefinition name
	Interface string // interface name inside the LB pod
}

// Gateway is the LB instance's own configuration.
type Gateway struct {
	Namespace string
	Name      string
	Networks  []Network      // interfaces towards the targets
	Subnets   []netip.Prefix // where endpoint IPs live
}

// BFD holds the BFD parameters of a GatewayRouter.
type BFD struct {
	Enabled    bool
	MinTx      time.Duration // desired minimum transmit interval
	MinRx      time.Duration // required minimum receive interval
	Multiplier uint8
	// Multihop selects RFC 5883 (UDP 4784, any received TTL) instead of
	// single hop RFC 5881 (UDP 3784, TTL 255).
	Multihop bool
	// LocalAddress is the source address of the BFD packets; invalid: the
	// kernel's choice for the route to the router.
	LocalAddress netip.Addr
}

// BGP holds the BGP session parameters of a GatewayRouter and the path
// attributes of the VIPs announced to it.
type BGP struct {
	LocalASN   uint32
	RemoteASN  uint32
	HoldTime   time.Duration
	LocalPort  uint16
	RemotePort uint16
	// Password is the TCP MD5 signature key of the session (RFC 2385), at
	// most MaxPasswordLength bytes; empty: no signature.
	Password Password
	// TTLSecurityHops > 0 turns on GTSM (RFC 5082) for an eBGP session:
	// packets are sent with TTL 255 and only those received with a TTL of
	// at least 256-TTLSecurityHops are accepted (255: directly connected).
	TTLSecurityHops uint8
	// Communities (RFC 1997) and LargeCommunities (RFC 8092) are attached
	// to every VIP announced to this router.
	Communities      []Community
	LargeCommunities []LargeCommunity
	// LocalPreference is sent with every VIP announced to this router; only
	// iBGP sessions carry it (RFC 4271 section 5.1.5). Nil: not set (GoBGP
	// sends 100 over iBGP); never 0.
	LocalPreference *uint32
}

// Router is one GatewayRouter: a data-centre gateway the LB peers with (BGP
// non-nil) or uses as a static next hop (BGP nil), optionally supervised by BFD.
type Router struct {
	Name      string // namespace/name
	Address   netip.Addr
	Interface string
	BGP       *BGP
	BFD       BFD
}

// State is the complete desired configuration of one LB instance.
type State struct {
	Generation uint64 // increases with every accepted change
	Gateway    Gateway
	Routes     []Route
	Services   []Service
	Routers    []Router
}

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}
