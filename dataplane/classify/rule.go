package classify

import (
	"net/netip"
	"slices"
	"strconv"

	"github.com/sllbrd/sllbrd/model"
)

// rule is the part of a validated route that Lookup checks after the
// index: sources (split by family), source ports and byte matches, and the
// destination ports for keys that fell back to a single interval.
type rule struct {
	anySource  bool
	src4, src6 []netip.Prefix
	srcPorts   []model.PortRange // sorted, merged; nil: any
	dstPorts   []model.PortRange // sorted, merged; nil: any
	bytes      []model.ByteMatch
}

// newRule validates r and returns its normalised form (addresses unmapped,
// prefixes masked, duplicates removed, port ranges sorted and merged, nil
// when they cover every port), or every problem found (each a *RouteError).
func newRule(r model.Route) (model.Route, []error) {
	v := validator{name: r.Name}
	if r.Name == "" {
		v.fail("name", "", "must not be empty")
	}
	if r.Service == "" {
		v.fail("backendRefs", "", "must name a Service")
	}
	if r.Priority < 1 {
		v.fail("priority", strconv.Itoa(int(r.Priority)), "must be at least 1")
	}
	out := r
	out.Destinations = v.destinations(r.Destinations)
	out.Sources = v.sources(r.Sources)
	v.families(out.Destinations, out.Sources)
	out.Protocols = v.protocols(r.Protocols)
	out.SourcePorts = v.ports("sourcePorts", r.SourcePorts)
	out.DestinationPorts = v.ports("destinationPorts", r.DestinationPorts)
	out.ByteMatches = v.byteMatches(r.ByteMatches, out.Protocols)
	if len(v.errs) > 0 {
		return model.Route{}, v.errs
	}
	return out, nil
}

// ruleOf returns the checks of a normalised route. Sources admit any
// packet when there are none, or when they hold 0.0.0.0/0 or ::/0 for every
// family among the destinations (packets carry one family).
func ruleOf(r model.Route) rule {
	any4 := slices.Contains(r.Sources, netip.PrefixFrom(netip.IPv4Unspecified(), 0))
	any6 := slices.Contains(r.Sources, netip.PrefixFrom(netip.IPv6Unspecified(), 0))
	restricted := slices.ContainsFunc(r.Destinations, func(d netip.Prefix) bool {
		return (d.Addr().Is4() && !any4) || (d.Addr().Is6() && !any6)
	})
	out := rule{anySource: len(r.Sources) == 0 || !restricted,
		srcPorts: r.SourcePorts, dstPorts: r.DestinationPorts, bytes: r.ByteMatches}
	for _, p := range r.Sources {
		if p.Addr().Is4() {
			out.src4 = append(out.src4, p)
		} else {
			out.src6 = append(out.src6, p)
		}
	}
	return out
}

// validator collects the errors of one route.
type validator struct {
	name string
	errs []error
}

func (v *validator) fail(field, value, reason string) {
	v.errs = append(v.errs, routeErr(v.name, field, value, reason))
}

// destinations returns the unmapped, de-duplicated destination prefixes.
func (v *validator) destinations(in []netip.Prefix) []netip.Prefix {
	if len(in) == 0 {
		v.fail("destinationCIDRs", "", "must not be empty")
	}
	var out []netip.Prefix
	for i, p := range in {
		field := indexed("destinationCIDRs", i)
		if !p.IsValid() {
			v.fail(field, p.String(), "is not a valid CIDR")
			continue
		}
		u, ok := unmapPrefix(p)
		if !ok || u.Bits() != u.Addr().BitLen() {
			v.fail(field, p.String(), "must be a single address (/32 or /128)")
			continue
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// sources returns the unmapped, masked, de-duplicated source prefixes.
func (v *validator) sources(in []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for i, p := range in {
		if !p.IsValid() {
			v.fail(indexed("sourceCIDRs", i), p.String(), "is not a valid CIDR")
			continue
		}
		u, ok := unmapPrefix(p)
		if !ok {
			u = p.Masked()
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// unmapPrefix turns an IPv4-mapped IPv6 prefix of length >= 96 into the IPv4
// prefix it denotes, masks it and drops any zone; ok is false for a mapped
// prefix shorter than /96, which is left as IPv6.
func unmapPrefix(p netip.Prefix) (netip.Prefix, bool) {
	a, bits := p.Addr().WithZone(""), p.Bits()
	if a.Is4In6() {
		if bits < 96 {
			return p, false
		}
		a, bits = a.Unmap(), bits-96
	}
	return netip.PrefixFrom(a, bits).Masked(), true
}

// families requires a source CIDR of each destination's family when the
// route restricts sources at all: otherwise that destination never matches.
func (v *validator) families(dsts, srcs []netip.Prefix) {
	if len(srcs) == 0 {
		return
	}
	for i, d := range dsts {
		if !slices.ContainsFunc(srcs, func(s netip.Prefix) bool { return s.Addr().Is4() == d.Addr().Is4() }) {
			v.fail(indexed("destinationCIDRs", i), d.String(), "no sourceCIDR of the same family")
		}
	}
}

// protocols returns the de-duplicated protocols.
func (v *validator) protocols(in []model.Protocol) []model.Protocol {
	if len(in) == 0 {
		v.fail("protocols", "", "must not be empty")
	}
	var out []model.Protocol
	for i, p := range in {
		if p != model.ProtoTCP && p != model.ProtoUDP && p != model.ProtoSCTP {
			v.fail(indexed("protocols", i), p.String(), "must be TCP, UDP or SCTP")
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// ports returns the ranges sorted and merged, or nil when they cover every port.
func (v *validator) ports(field string, in []model.PortRange) []model.PortRange {
	var out []model.PortRange
	for i, r := range in {
		if r.From > r.To {
			v.fail(indexed(field, i), strconv.Itoa(int(r.From))+"-"+strconv.Itoa(int(r.To)),
				"first port is above last port")
			continue
		}
		out = append(out, r)
	}
	out = mergeRanges(out)
	if len(out) == 1 && out[0] == model.AnyPort {
		return nil
	}
	return out
}

// mergeRanges sorts valid ranges and joins the overlapping and adjacent ones.
func mergeRanges(in []model.PortRange) []model.PortRange {
	if len(in) == 0 {
		return nil
	}
	s := slices.Clone(in)
	slices.SortFunc(s, func(a, b model.PortRange) int { return int(a.From) - int(b.From) })
	out := s[:1]
	for _, r := range s[1:] {
		last := &out[len(out)-1]
		if int(r.From) <= int(last.To)+1 {
			last.To = max(last.To, r.To)
			continue
		}
		out = append(out, r)
	}
	return out
}

func (v *validator) byteMatches(in []model.ByteMatch, protos []model.Protocol) []model.ByteMatch {
	var out []model.ByteMatch
	for i, m := range in {
		field, value := indexed("byteMatches", i), m.String()
		switch {
		case m.Size != 1 && m.Size != 2 && m.Size != 4:
			v.fail(field, value, "size must be 1, 2 or 4")
		case m.Mask == 0:
			v.fail(field, value, "mask is zero: it would ignore every bit")
		case m.Mask&^sizeMask(m.Size) != 0:
			v.fail(field, value, "mask is wider than the size")
		case m.Value&^m.Mask != 0:
			v.fail(field, value, "value has bits outside the mask")
		case !slices.Contains(protos, m.Protocol):
			v.fail(field, value, "protocol "+m.Protocol.String()+" is not one of the route's protocols")
		default:
			out = append(out, m)
		}
	}
	return out
}

// sizeMask returns the all-ones mask of a field of size bytes (1, 2 or 4).
func sizeMask(size uint8) uint32 {
	if size >= 4 {
		return 0xffffffff
	}
	return 1<<(8*uint32(size)) - 1
}
