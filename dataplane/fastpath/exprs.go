package fastpath

import (
	"encoding/binary"
	"net/netip"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/dataplane/flowkey"
	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/maglev"
	"github.com/sllbrd/sllbrd/model"
)

// Matches use register 1; the flow key fills 32-bit registers from
// NFT_REG32_00 on (register 1 is the same memory as NFT_REG32_00..03).
const matchReg = 1

func reg32(i int) uint32 { return unix.NFT_REG32_00 + uint32(i) }

// Header offsets.
const (
	ipv4FragOff    = 6 // fragment field, then TTL and protocol
	ipv6NextHdrOff = 6
	ipv4SaddrOff   = 12
	ipv4DaddrOff   = 16
	ipv6SaddrOff   = 8
	ipv6DaddrOff   = 24
	sportOff       = 0
	dportOff       = 2
	echoIDOff      = 4 // ICMP and ICMPv6 echo identifier
	echoSeqOff     = 6 // its sequence number: the last 2 of the 8 bytes userspace needs
	objCounter     = unix.NFT_OBJECT_COUNTER
)

func load(base expr.PayloadBase, off, n uint32, reg uint32) *expr.Payload {
	return &expr.Payload{DestRegister: reg, Base: base, Offset: off, Len: n}
}

// sourceMatch matches the source against r's source CIDRs of family fam;
// nothing when r has none or one covers every address.
func (c *compiler) sourceMatch(r model.Route, fam family) []expr.Any {
	var prefixes []netip.Prefix
	for _, p := range r.Sources {
		if familyOf(p.Addr()) != fam {
			continue
		}
		if p.Bits() == 0 {
			return nil
		}
		prefixes = append(prefixes, p)
	}
	if len(r.Sources) == 0 {
		return nil
	}
	off, size := uint32(ipv4SaddrOff), uint32(4)
	if fam == v6 {
		off, size = ipv6SaddrOff, 16
	}
	ld := load(expr.PayloadBaseNetworkHeader, off, size, matchReg)
	if len(prefixes) == 1 {
		p := prefixes[0].Masked()
		return []expr.Any{ld,
			&expr.Bitwise{SourceRegister: matchReg, DestRegister: matchReg, Len: size, Mask: prefixMask(p), Xor: make([]byte, size)},
			&expr.Cmp{Op: expr.CmpOpEq, Register: matchReg, Data: p.Addr().AsSlice()}}
	}
	kind := nft.PrefixSet4
	if fam == v6 {
		kind = nft.PrefixSet6
	}
	// An empty list (no CIDR of this family) matches nothing: an empty set.
	set := nft.Set{Name: sourceSetName(fam, r.Name), Kind: kind, Prefixes: prefixes}
	c.addSet(set)
	return []expr.Any{ld, &expr.Lookup{SourceRegister: matchReg, SetName: set.Name}}
}

func prefixMask(p netip.Prefix) []byte {
	mask := make([]byte, p.Addr().BitLen()/8)
	for i := range p.Bits() {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return mask
}

// portMatch matches the port at transport offset off against ranges (nil:
// any).
func (c *compiler) portMatch(r model.Route, ranges []model.PortRange, which string, off uint32) []expr.Any {
	if len(ranges) == 0 {
		return nil
	}
	ld := load(expr.PayloadBaseTransportHeader, off, 2, matchReg)
	if len(ranges) == 1 {
		from, to := be16(ranges[0].From), be16(ranges[0].To)
		if ranges[0].From == ranges[0].To {
			return []expr.Any{ld, &expr.Cmp{Op: expr.CmpOpEq, Register: matchReg, Data: from}}
		}
		return []expr.Any{ld, &expr.Range{Op: expr.CmpOpEq, Register: matchReg, FromData: from, ToData: to}}
	}
	set := nft.Set{Name: portSetName(which, r.Name), Kind: nft.PortSet}
	for _, p := range ranges {
		set.Ports = append(set.Ports, nft.PortRange{From: p.From, To: p.To})
	}
	c.addSet(set)
	return []expr.Any{ld, &expr.Lookup{SourceRegister: matchReg, SetName: set.Name}}
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// byteMatches matches the byte matches of proto (those of other protocols
// do not apply); ok is false when one reads beyond maxOffset.
func byteMatches(ms []model.ByteMatch, proto model.Protocol, maxOffset int) (out []expr.Any, ok bool) {
	for _, m := range ms {
		if m.Protocol != proto {
			continue
		}
		if int(m.Offset) > maxOffset {
			return nil, false
		}
		size := uint32(m.Size)
		out = append(out, load(expr.PayloadBaseTransportHeader, uint32(m.Offset), size, matchReg))
		if full := uint32(1)<<(8*size) - 1; m.Mask != full { // 1<<32 is 0 in uint32: full is then all ones
			out = append(out, &expr.Bitwise{SourceRegister: matchReg, DestRegister: matchReg, Len: size,
				Mask: bigEndian(m.Mask, size), Xor: make([]byte, size)})
		}
		out = append(out, &expr.Cmp{Op: expr.CmpOpEq, Register: matchReg, Data: bigEndian(m.Value, size)})
	}
	return out, true
}

func bigEndian(v uint32, size uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, v)
	return b[4-size:]
}

// isProtocol matches packets of protocol p that the kernel path may decide:
// IPv4 without fragment bits (the 4 bytes at offset 6: fragment field,
// TTL, protocol, masked to offset, MF and protocol), IPv6 whose fixed
// header's next header is p.
func isProtocol(fam family, p model.Protocol) []expr.Any {
	if fam == v4 {
		return []expr.Any{
			load(expr.PayloadBaseNetworkHeader, ipv4FragOff, 4, matchReg),
			&expr.Bitwise{SourceRegister: matchReg, DestRegister: matchReg, Len: 4, Mask: []byte{0x3f, 0xff, 0, 0xff}, Xor: make([]byte, 4)},
			&expr.Cmp{Op: expr.CmpOpEq, Register: matchReg, Data: []byte{0, 0, 0, byte(p)}},
		}
	}
	return []expr.Any{
		load(expr.PayloadBaseNetworkHeader, ipv6NextHdrOff, 1, matchReg),
		&expr.Cmp{Op: expr.CmpOpEq, Register: matchReg, Data: []byte{byte(p)}},
	}
}

// notEcho returns when the ICMP type is not echo request or reply: ICMP 0
// and 8 are the types t with t & 0xf7 == 0, ICMPv6 128 and 129 those with
// t & 0xfe == 0x80.
func notEcho(fam family) []expr.Any {
	mask, want := byte(0xf7), byte(0)
	if fam == v6 {
		mask, want = 0xfe, 0x80
	}
	return []expr.Any{
		load(expr.PayloadBaseTransportHeader, 0, 1, matchReg),
		&expr.Bitwise{SourceRegister: matchReg, DestRegister: matchReg, Len: 1, Mask: []byte{mask}, Xor: []byte{0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: matchReg, Data: []byte{want}},
		&expr.Verdict{Kind: expr.VerdictReturn},
	}
}

// mappedSource returns when the IPv6 source is IPv4-mapped (::ffff:0:0/96).
func mappedSource() []expr.Any {
	p := netip.MustParsePrefix("::ffff:0:0/96")
	return []expr.Any{
		load(expr.PayloadBaseNetworkHeader, ipv6SaddrOff, 16, matchReg),
		&expr.Bitwise{SourceRegister: matchReg, DestRegister: matchReg, Len: 16, Mask: prefixMask(p), Xor: make([]byte, 16)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: matchReg, Data: p.Addr().AsSlice()},
		&expr.Verdict{Kind: expr.VerdictReturn},
	}
}

// balance loads the flow key of a packet of proto (flowkey's layout: each
// field in its own 32-bit registers; the two addresses, adjacent in the
// header, in one load), counts the packet in counter, sets the fwmark that
// "jhash key mod M seed FlowSeed" selects in the Service's entry map, and
// goes to that mark's endpoint chain through the endpoint map:
//
//	meta mark set jhash <key> mod M seed FlowSeed map @m4-<service>-<M>
//	meta mark vmap @em4-<service>-<S>
//
// The mark is loaded back rather than looked up from the register the map
// wrote: nft (1.0.6) cannot list a lookup keyed by a map's result. An
// echo's identifier is both ports; it is checked to be 8 bytes long, as
// userspace requires.
func balance(fam family, proto model.Protocol, echo bool, svc *Service, counter, mapName, endpointMap string) []expr.Any {
	var out []expr.Any
	if echo {
		out = append(out, load(expr.PayloadBaseTransportHeader, echoSeqOff, 2, reg32(0)))
	}
	fields := flowkey.Fields(proto, svc.SCTPPortsOnly)
	reg := 0
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		size := f.Padded(uint8(fam))
		switch f {
		case flowkey.Source:
			if i+1 < len(fields) && fields[i+1] == flowkey.Destination {
				i++
				size *= 2
			}
			out = append(out, load(expr.PayloadBaseNetworkHeader, addrOffset(fam, ipv4SaddrOff, ipv6SaddrOff), uint32(size), reg32(reg)))
		case flowkey.Destination:
			out = append(out, load(expr.PayloadBaseNetworkHeader, addrOffset(fam, ipv4DaddrOff, ipv6DaddrOff), uint32(size), reg32(reg)))
		case flowkey.Ports:
			out = append(out, load(expr.PayloadBaseTransportHeader, sportOff, 4, reg32(reg)))
		case flowkey.EchoID:
			out = append(out, load(expr.PayloadBaseTransportHeader, echoIDOff, 2, reg32(reg)))
		case flowkey.Protocol:
			out = append(out, &expr.Immediate{Register: reg32(reg), Data: []byte{byte(proto), 0, 0, 0}})
		}
		reg += size / flowkey.RegisterSize
	}
	entries := uint32(len(svc.entries(fam)))
	return append(out,
		&expr.Objref{Type: objCounter, Name: counter},
		&expr.Hash{SourceRegister: reg32(0), DestRegister: reg32(0), Length: uint32(flowkey.Len(uint8(fam), proto, svc.SCTPPortsOnly)),
			Modulus: entries, Seed: maglev.FlowSeed, Type: expr.HashTypeJenkins},
		&expr.Lookup{SourceRegister: reg32(0), SetName: mapName, IsDestRegSet: true, DestRegister: reg32(0)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg32(0)},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: reg32(0)},
		&expr.Lookup{SourceRegister: reg32(0), SetName: endpointMap, IsDestRegSet: true, DestRegister: 0})
}

func addrOffset(fam family, off4, off6 uint32) uint32 {
	if fam == v4 {
		return off4
	}
	return off6
}

// countAndAccept counts in counter and accepts (the route chain has set
// the fwmark).
func countAndAccept(counter string) []expr.Any {
	return []expr.Any{
		&expr.Objref{Type: objCounter, Name: counter},
		&expr.Verdict{Kind: expr.VerdictAccept},
	}
}
