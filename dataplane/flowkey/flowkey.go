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
	// SourcePort is the TCP, UDP or SCTP source port, or the ICMP echo
	// identifier.
	SourcePort
	// DestinationPort is the TCP, UDP or SCTP destination port, or the
	// ICMP echo identifier.
	DestinationPort
	// Protocol is the IP protocol number.
	Protocol
)

// RegisterSize is the size of an nftables register: every field starts on
// a multiple of it.
const RegisterSize = 4

// MaxLen is the longest key: an IPv6 five-tuple.
const MaxLen = 16 + 16 + 3*RegisterSize

var (
	fiveTuple = []Field{Source, Destination, SourcePort, DestinationPort, Protocol}
	portsOnly = []Field{SourcePort, DestinationPort, Protocol}
)

// Fields returns the fields of a key in order: the five-tuple, or only the
// ports and the protocol. The caller must not modify the slice.
func Fields(onlyPorts bool) []Field {
	if onlyPorts {
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
	case SourcePort, DestinationPort:
		return 2
	}
	return 1
}

// Padded is Size rounded up to a whole register.
func (f Field) Padded(family uint8) int {
	return (f.Size(family) + RegisterSize - 1) / RegisterSize * RegisterSize
}

// Len is the length of a key of family 4 or 6.
func Len(family uint8, onlyPorts bool) int {
	n := 0
	for _, f := range Fields(onlyPorts) {
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
	if !PortsOnly(p.Proto, sctpPortsOnly) {
		if p.Family == 4 {
			src, dst := p.Src.Unmap().As4(), p.Dst.Unmap().As4()
			copy(k[0:4], src[:])
			copy(k[4:8], dst[:])
			n = 8
		} else {
			src, dst := p.Src.As16(), p.Dst.As16()
			copy(k[0:16], src[:])
			copy(k[16:32], dst[:])
			n = 32
		}
	}
	binary.BigEndian.PutUint16(k[n:], p.SrcPort)
	binary.BigEndian.PutUint16(k[n+RegisterSize:], p.DstPort)
	k[n+2*RegisterSize] = byte(p.Proto)
	return maglev.JHash(k[:n+3*RegisterSize], maglev.FlowSeed)
}
