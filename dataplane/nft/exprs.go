package nft

import (
	"encoding/binary"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Small builders for the expressions the rules are made of. Every rule uses
// register 1 only.

func matchNFProto(family byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{family}},
	}
}

func matchL4Proto(proto byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
}

func load(base expr.PayloadBase, offset, length uint32) *expr.Payload {
	return &expr.Payload{DestRegister: 1, Base: base, Offset: offset, Len: length}
}

// inSet loads length bytes at offset from base and looks them up in set;
// notIn inverts the lookup.
func inSet(base expr.PayloadBase, offset, length uint32, set *nftables.Set, notIn bool) []expr.Any {
	return []expr.Any{
		load(base, offset, length),
		&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID, Invert: notIn},
	}
}

func byteEq(base expr.PayloadBase, offset uint32, v byte) []expr.Any {
	return []expr.Any{
		load(base, offset, 1),
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{v}},
	}
}

func byteRange(base expr.PayloadBase, offset uint32, from, to byte) []expr.Any {
	return []expr.Any{
		load(base, offset, 1),
		&expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: []byte{from}, ToData: []byte{to}},
	}
}

func markNonZero() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
	}
}

func setMarkZero() []expr.Any {
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: binary.NativeEndian.AppendUint32(nil, 0)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
	}
}

// copyToSource loads length bytes at transport offset inner (the embedded
// packet's destination) and writes them over the source address at network
// offset src, updating the checksum found at network offset csum.
func copyToSource(inner, src, length, csum uint32) []expr.Any {
	return []expr.Any{
		load(expr.PayloadBaseTransportHeader, inner, length),
		&expr.Payload{
			OperationType: expr.PayloadWrite, SourceRegister: 1,
			Base: expr.PayloadBaseNetworkHeader, Offset: src, Len: length,
			CsumType: expr.CsumTypeInet, CsumOffset: csum,
		},
	}
}

// reg32 is the number of 32-bit register i (NFT_REG32_00 + i); registers
// 0..15 hold 64 bytes of consecutive data.
func reg32(i uint32) uint32 { return unix.NFT_REG32_00 + i }

const (
	ipv4DaddrOff = 16
	ipv4SaddrOff = 12
	ipv4CsumOff  = 10
	ipv6DaddrOff = 24
	ipv6SaddrOff = 8
	// ICMPv6 checksum seen from the network header of an ICMPv6 packet
	// without extension headers (40-byte header + 2).
	icmp6CsumFromNetOff = 42
	// Embedded destination address: ICMP header (8) + its offset in the
	// embedded header.
	icmpInnerDaddrOff  = 8 + ipv4DaddrOff
	icmp6InnerDaddrOff = 8 + ipv6DaddrOff

	icmpDestUnreachable = 3
	icmpTimeExceeded    = 11
	icmpFragNeeded      = 4 // code of destination-unreachable
	icmp6DestUnreach    = 1
	icmp6PacketTooBig   = 2
	icmp6TimeExceeded   = 3
)

var (
	afInet  = byte(unix.NFPROTO_IPV4)
	afInet6 = byte(unix.NFPROTO_IPV6)
)
