package flowkey

import (
	"encoding/binary"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/maglev"
	"github.com/sllbrd/sllbrd/model"
)

// Field is one register-aligned part of a flow key.
type Field uint8

const (
	// Source is the source address.
	Source Field = iota
	// Destination is the destination address.
	Destination
	// Ports is the TCP, UDP or SCTP source and destination port, 4 bytes
	// as they follow each other in the header (one register: one load).
	Ports
	// EchoID is the ICMP or ICMPv6 echo identifier (2 bytes, padded); an
	// echo's key holds it twice, in place of both ports.
	EchoID
	// Protocol is the IP protocol number.
	Protocol
)

// RegisterSize is the size of an nftables register: every field starts on
// a multiple of it.
const RegisterSize = 4

// MaxLen is the longest key: an IPv6 echo.
const MaxLen = 16 + 16 + 3*RegisterSize

var (
	fiveTuple = []Field{Source, Destination, Ports, Protocol}
	portsOnly = []Field{Ports, Protocol}
	echo      = []Field{Source, Destination, EchoID, EchoID, Protocol}
)

// Fields returns the fields of the key of a flow of proto, in order: for
// ICMP and ICMPv6 (echo) the addresses, the identifier twice and the
// protocol; for the others the addresses, the ports and the protocol, or
// only the ports and the protocol when PortsOnly. The caller must not
// modify the slice.
func Fields(proto model.Protocol, sctpPortsOnly bool) []Field {
	switch {
	case proto == model.ProtoICMP || proto == model.ProtoICMPv6:
		return echo
	case PortsOnly(proto, sctpPortsOnly):
		return portsOnly
	}
	return fiveTuple
}

// Size is the number of bytes of the field's value in family 4 or 6 (before
// padding).
func (f Field) Size(family uint8) int {
	switch f {
	case Source, Destination:
		if family == 4 {
			return 4
		}
		return 16
	case Ports:
		return 4
	case EchoID:
		return 2
	}
	return 1
}

// Padded is Size rounded up to a whole register.
func (f Field) Padded(family uint8) int {
	return (f.Size(family) + RegisterSize - 1) / RegisterSize * RegisterSize
}

// Len is the length of the key of a flow of proto in family 4 or 6.
func Len(family uint8, proto model.Protocol, sctpPortsOnly bool) int {
	n := 0
	for _, f := range Fields(proto, sctpPortsOnly) {
		n += f.Padded(family)
	}
	return n
}

// PortsOnly reports whether a flow of proto is hashed on its ports and
// protocol only: SCTP in a Service that hashes SCTP so.
func PortsOnly(proto model.Protocol, sctpPortsOnly bool) bool {
	return sctpPortsOnly && proto == model.ProtoSCTP
}

// Hash returns the flow hash of p (see the package documentation). It
// allocates nothing.
func Hash(p *packet.Packet, sctpPortsOnly bool) uint32 {
	var k [MaxLen]byte
	n := 0
	for _, f := range Fields(p.Proto, sctpPortsOnly) {
		switch f {
		case Source, Destination:
			a := p.Src
			if f == Destination {
				a = p.Dst
			}
			if p.Family == 4 {
				b := a.Unmap().As4()
				n += copy(k[n:], b[:])
			} else {
				b := a.As16()
				n += copy(k[n:], b[:])
			}
		case Ports:
			binary.BigEndian.PutUint16(k[n:], p.SrcPort)
			binary.BigEndian.PutUint16(k[n+2:], p.DstPort)
			n += RegisterSize
		case EchoID:
			binary.BigEndian.PutUint16(k[n:], p.SrcPort) // both ports hold the identifier
			n += RegisterSize
		case Protocol:
			k[n] = byte(p.Proto)
			n += RegisterSize
		}
	}
	return maglev.JHash(k[:n], maglev.FlowSeed)
}
