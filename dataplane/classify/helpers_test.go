package classify

import (
	"net/netip"
	"slices"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/model"
)

// route builds a valid TCP route to dst with the given name and priority;
// options adjust it.
func route(name string, prio int32, dst string, opts ...func(*model.Route)) model.Route {
	r := model.Route{
		Name:         name,
		Service:      "svc-" + name,
		Priority:     prio,
		Destinations: []netip.Prefix{netip.MustParsePrefix(dst)},
		Protocols:    []model.Protocol{model.ProtoTCP},
	}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func dsts(cidrs ...string) func(*model.Route) {
	return func(r *model.Route) { r.Destinations = prefixes(cidrs) }
}

func srcs(cidrs ...string) func(*model.Route) {
	return func(r *model.Route) { r.Sources = prefixes(cidrs) }
}

func protos(ps ...model.Protocol) func(*model.Route) {
	return func(r *model.Route) { r.Protocols = ps }
}

func dports(rs ...model.PortRange) func(*model.Route) {
	return func(r *model.Route) { r.DestinationPorts = rs }
}

func sports(rs ...model.PortRange) func(*model.Route) {
	return func(r *model.Route) { r.SourcePorts = rs }
}

func bytematches(ms ...model.ByteMatch) func(*model.Route) {
	return func(r *model.Route) { r.ByteMatches = ms }
}

func prefixes(cidrs []string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}

func ports(from, to uint16) model.PortRange { return model.PortRange{From: from, To: to} }

// flow builds a transport packet src:sport -> dst:dport.
func flow(proto model.Protocol, src string, sport uint16, dst string, dport uint16, l4 ...byte) *packet.Packet {
	s, d := netip.MustParseAddr(src), netip.MustParseAddr(dst)
	fam := uint8(6)
	if d.Unmap().Is4() {
		fam = 4
	}
	return &packet.Packet{Kind: packet.KindTransport, Family: fam, Proto: proto,
		Src: s, Dst: d, SrcPort: sport, DstPort: dport, L4: l4}
}

func withKind(k packet.Kind, p *packet.Packet) *packet.Packet { p.Kind = k; return p }

// lookupName returns the winning route's name, or "" when none matches.
func lookupName(t *Table, p *packet.Packet) string {
	idx, ok := t.Lookup(p)
	if !ok {
		return ""
	}
	return t.Name(idx)
}

// refLookup is the specification written as the obvious scan: the first
// route (routes are in precedence order, as Table.Routes returns them) that
// matches p, or -1.
func refLookup(routes []model.Route, p *packet.Packet) int {
	var proto model.Protocol
	switch p.Kind {
	case packet.KindTransport, packet.KindFirstFragment, packet.KindICMPError:
		proto = p.Proto
	case packet.KindICMPEcho:
	default:
		return -1
	}
	for i, r := range routes {
		if refMatches(r, p, proto) {
			return i
		}
	}
	return -1
}

func refMatches(r model.Route, p *packet.Packet, proto model.Protocol) bool {
	dst, src := p.Dst.Unmap(), p.Src.Unmap()
	if !slices.ContainsFunc(r.Destinations, func(d netip.Prefix) bool { return d.Addr() == dst }) {
		return false
	}
	if len(r.Sources) > 0 && !slices.ContainsFunc(r.Sources, func(s netip.Prefix) bool { return s.Contains(src) }) {
		return false
	}
	if p.Kind == packet.KindICMPEcho {
		return true
	}
	if !slices.Contains(r.Protocols, proto) || !refPorts(r.SourcePorts, p.SrcPort) || !refPorts(r.DestinationPorts, p.DstPort) {
		return false
	}
	for _, m := range r.ByteMatches {
		if m.Protocol != proto {
			continue
		}
		end := int(m.Offset) + int(m.Size)
		if end > len(p.L4) {
			return false
		}
		var v uint32
		for _, b := range p.L4[m.Offset:end] {
			v = v<<8 | uint32(b)
		}
		if v&m.Mask != m.Value {
			return false
		}
	}
	return true
}

func refPorts(rs []model.PortRange, port uint16) bool {
	return len(rs) == 0 || slices.ContainsFunc(rs, func(r model.PortRange) bool { return r.Contains(port) })
}

func netip4(s string) netip.Prefix { return netip.MustParsePrefix(s) }
