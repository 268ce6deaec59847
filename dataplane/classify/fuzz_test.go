package classify

import (
	"net/netip"
	"strconv"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/model"
)

// byteSource hands out the fuzzer's bytes, then zeros.
type byteSource []byte

func (b *byteSource) next() byte {
	if len(*b) == 0 {
		return 0
	}
	c := (*b)[0]
	*b = (*b)[1:]
	return c
}

func (b *byteSource) pick(n int) int { return int(b.next()) % n }

func (b *byteSource) port() uint16 { return uint16(b.pick(8)) * 10 }

func (b *byteSource) addr() netip.Addr {
	if b.next()&1 == 0 {
		return netip.AddrFrom4([4]byte{20, 0, 0, byte(b.pick(3))})
	}
	return netip.AddrFrom16([16]byte{0x20, 1, 15: byte(b.pick(3))})
}

func (b *byteSource) route(i int) model.Route {
	a := b.addr()
	bits := a.BitLen()
	if b.pick(8) == 0 {
		bits -= b.pick(9) // sometimes not a single address
	}
	r := model.Route{
		Name: "r" + strconv.Itoa(b.pick(40)), Service: "s", Priority: int32(b.pick(4)),
		Destinations: []netip.Prefix{netip.PrefixFrom(a, bits)},
		Protocols:    []model.Protocol{[]model.Protocol{6, 17, 132, 1, 6}[b.pick(5)]},
	}
	for range b.pick(3) {
		r.DestinationPorts = append(r.DestinationPorts, model.PortRange{From: b.port(), To: b.port()})
	}
	for range b.pick(2) {
		r.SourcePorts = append(r.SourcePorts, model.PortRange{From: b.port(), To: b.port()})
	}
	if b.pick(3) == 0 {
		src := b.addr()
		r.Sources = []netip.Prefix{netip.PrefixFrom(src, src.BitLen()-b.pick(3)*8)}
	}
	for range b.pick(3) {
		r.ByteMatches = append(r.ByteMatches, model.ByteMatch{Protocol: r.Protocols[0],
			Offset: uint16(b.pick(24)), Size: uint8(b.pick(5)), Mask: uint32(b.next()), Value: uint32(b.next() & 3)})
	}
	return r
}

func (b *byteSource) packet() *packet.Packet {
	p := flow([]model.Protocol{6, 17, 132}[b.pick(3)], "20.0.0.0", b.port()+uint16(b.pick(2)), "20.0.0.0", b.port()+uint16(b.pick(2)))
	p.Kind = packet.Kind(b.pick(7))
	p.Dst, p.Src = b.addr(), b.addr()
	if p.Src.Is4() != p.Dst.Is4() { // one packet, one family
		p.Src = p.Dst
	}
	p.L4 = make([]byte, b.pick(26))
	for i := range p.L4 {
		p.L4[i] = b.next() & 3
	}
	return p
}

// FuzzCompileLookup builds routes (valid or not) and packets from the input
// and requires Lookup to agree with the plain priority scan.
func FuzzCompileLookup(f *testing.F) {
	f.Add([]byte{3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte{9, 1, 7, 1, 0, 2, 1, 1, 0, 0, 1, 2, 2, 255, 3, 1, 0, 0, 4, 4, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := byteSource(data)
		routes := make([]model.Route, b.pick(10))
		for i := range routes {
			routes[i] = b.route(i)
		}
		table, _ := Compile(routes)
		compiled := table.Routes()
		for range 8 {
			p := b.packet()
			got, ok := table.Lookup(p)
			if !ok {
				got = -1
			}
			if want := refLookup(compiled, p); got != want {
				t.Fatalf("Lookup(%+v) = %d, scan says %d; routes %+v", *p, got, want, compiled)
			}
		}
	})
}
