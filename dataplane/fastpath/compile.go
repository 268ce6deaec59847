package fastpath

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/nftables/expr"

	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/model"
)

// Program is a compiled Input.
type Program struct {
	// Table is what package nft programs.
	Table *nft.FastPath
	// RouteCounters names, for each route counter object, its route.
	RouteCounters map[string]RouteLabels
	// EndpointCounters names, for each endpoint counter object, its
	// endpoint.
	EndpointCounters map[string]EndpointLabels
	// Userspace says what of the routes the kernel leaves to userspace
	// because the rules cannot express it (see the package documentation).
	Userspace []string
}

// RouteLabels are the labels of a route's counters.
type RouteLabels struct{ Route, Service string }

// EndpointLabels are the labels of an endpoint's counters.
type EndpointLabels struct {
	Service string
	ID      int
	Addr    netip.Addr
}

// Protocols the kernel decides (the ICMP of each family is echo only).
var transports = []model.Protocol{model.ProtoTCP, model.ProtoUDP, model.ProtoSCTP}

// compiler carries one Compile.
type compiler struct {
	in       Input
	services map[string]*Service
	out      *Program
	chains   map[string]bool // emitted
	sets     map[string]bool
	counters map[string]bool
}

// Compile turns in into nftables objects. It never fails: whatever it
// cannot express is left to userspace (Program.Userspace).
func Compile(in Input) *Program {
	if in.MaxPayloadOffset <= 0 {
		in.MaxPayloadOffset = 255
	}
	c := &compiler{in: in, services: map[string]*Service{}, chains: map[string]bool{}, sets: map[string]bool{}, counters: map[string]bool{},
		out: &Program{Table: &nft.FastPath{}, RouteCounters: map[string]RouteLabels{}, EndpointCounters: map[string]EndpointLabels{}}}
	for i := range in.Services {
		c.services[in.Services[i].Name] = &in.Services[i]
	}
	for _, s := range in.Services {
		for _, fam := range []family{v4, v6} {
			c.service(&s, fam)
		}
	}
	keys := c.dispatchKeys()
	for _, k := range keys {
		c.dispatch(k)
	}
	for i := 0; i < len(keys); {
		j := i
		var protos []model.Protocol
		for ; j < len(keys) && keys[j].vip == keys[i].vip; j++ {
			protos = append(protos, keys[j].proto)
		}
		c.vip(keys[i].vip, protos)
		i = j
	}
	return c.out
}

// dispatchKey is one (VIP, protocol): protocol 1 or 58 stands for echo.
type dispatchKey struct {
	vip   netip.Addr
	proto model.Protocol
}

// dispatchKeys lists every (VIP, protocol) the routes name, and (VIP, ICMP)
// for every VIP, in a fixed order.
func (c *compiler) dispatchKeys() []dispatchKey {
	var keys []dispatchKey
	seen := map[dispatchKey]bool{}
	add := func(k dispatchKey) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, r := range c.in.Routes {
		for _, d := range r.Destinations {
			vip := d.Addr().Unmap()
			add(dispatchKey{vip, icmpOf(familyOf(vip))})
			for _, p := range r.Protocols {
				add(dispatchKey{vip, p})
			}
		}
	}
	slices.SortFunc(keys, func(a, b dispatchKey) int {
		if c := a.vip.Compare(b.vip); c != 0 {
			return c
		}
		return protoRank(a.proto) - protoRank(b.proto)
	})
	return keys
}

// protoRank orders a VIP's protocol rules: the common ones first.
func protoRank(p model.Protocol) int {
	switch p {
	case model.ProtoTCP:
		return 0
	case model.ProtoUDP:
		return 1
	case model.ProtoSCTP:
		return 2
	}
	return 3
}

func icmpOf(fam family) model.Protocol {
	if fam == v4 {
		return model.ProtoICMP
	}
	return model.ProtoICMPv6
}

// dispatch emits the chain of one (VIP, protocol): the routes that may
// match it, in precedence order.
func (c *compiler) dispatch(k dispatchKey) {
	fam := familyOf(k.vip)
	echo := k.proto == icmpOf(fam)
	ch := nft.Chain{Name: dispatchChainName(fam, k.vip, k.proto)}
	if echo {
		ch.Rules = append(ch.Rules, nft.Rule{Comment: "not an echo: to userspace", Exprs: notEcho(fam)})
	}
	if fam == v6 && c.anySources(k) {
		ch.Rules = append(ch.Rules, nft.Rule{Comment: "IPv4-mapped source: to userspace", Exprs: mappedSource()})
	}
	for _, r := range c.in.Routes {
		if !slices.ContainsFunc(r.Destinations, func(d netip.Prefix) bool { return d.Addr().Unmap() == k.vip }) ||
			(!echo && !slices.Contains(r.Protocols, k.proto)) {
			continue
		}
		rule, unconditional := c.routeRule(r, fam, k.proto, echo)
		ch.Rules = append(ch.Rules, rule)
		if unconditional {
			break // the routes after it can never match
		}
	}
	c.out.Table.Chains = append(c.out.Table.Chains, ch)
}

// vip emits the chain a VIP's packets jump to: one rule per protocol of
// its routes, going to the chain of (VIP, protocol). An IPv4 packet matches
// only when it is not a fragment (neither offset nor more-fragments set),
// an IPv6 packet only when its fixed header's next header is the protocol
// (no extension header).
func (c *compiler) vip(vip netip.Addr, protos []model.Protocol) {
	fam := familyOf(vip)
	ch := nft.Chain{Name: vipChainName(fam, vip)}
	for _, p := range protos {
		ch.Rules = append(ch.Rules, nft.Rule{Comment: protoName(p), Exprs: append(isProtocol(fam, p),
			&expr.Verdict{Kind: expr.VerdictGoto, Chain: dispatchChainName(fam, vip, p)})})
	}
	c.out.Table.Chains = append(c.out.Table.Chains, ch)
	c.out.Table.Dispatch = append(c.out.Table.Dispatch, nft.Dispatch{VIP: vip, Chain: ch.Name})
}

// anySources reports whether a route of k's VIP restricts sources.
func (c *compiler) anySources(k dispatchKey) bool {
	return slices.ContainsFunc(c.in.Routes, func(r model.Route) bool {
		return len(r.Sources) > 0 && slices.ContainsFunc(r.Destinations, func(d netip.Prefix) bool { return d.Addr().Unmap() == k.vip })
	})
}

// routeRule is route r's rule in the chain of (VIP, proto): its matches
// and "goto" its route chain, or "return" (to userspace) when a match
// cannot be expressed. unconditional reports a rule that matches every
// packet of the chain.
func (c *compiler) routeRule(r model.Route, fam family, proto model.Protocol, echo bool) (nft.Rule, bool) {
	var m []expr.Any
	m = append(m, c.sourceMatch(r, fam)...)
	if !echo {
		m = append(m, c.portMatch(r, r.SourcePorts, "sp", sportOff)...)
		m = append(m, c.portMatch(r, r.DestinationPorts, "dp", dportOff)...)
		bytes, ok := byteMatches(r.ByteMatches, proto, c.in.MaxPayloadOffset)
		if !ok {
			if why := fmt.Sprintf("route %s, %s: a byte match beyond transport offset %d", r.Name, proto, c.in.MaxPayloadOffset); !slices.Contains(c.out.Userspace, why) {
				c.out.Userspace = append(c.out.Userspace, why)
			}
			return nft.Rule{Comment: fmt.Sprintf("route %s: to userspace", r.Name), Exprs: append(m, &expr.Verdict{Kind: expr.VerdictReturn})}, len(m) == 0
		}
		m = append(m, bytes...)
	}
	target := c.routeChain(r, fam, proto, echo)
	return nft.Rule{Comment: fmt.Sprintf("route %s", r.Name), Exprs: append(m, &expr.Verdict{Kind: expr.VerdictGoto, Chain: target})}, len(m) == 0
}

// routeChain emits (once) the chain that balances route r's packets of
// proto in family fam and returns its name. It is empty, so the packet goes
// to userspace, when the Service does not exist or has no ready endpoint
// of the family.
func (c *compiler) routeChain(r model.Route, fam family, proto model.Protocol, echo bool) string {
	name := routeChainName(fam, proto, r.Name)
	if c.chains[name] {
		return name
	}
	c.chains[name] = true
	ch := nft.Chain{Name: name}
	svc := c.services[r.Service]
	if svc != nil && len(svc.entries(fam)) > 0 {
		counter := routeCounterName(r.Name, r.Service)
		if !c.counters[counter] {
			c.counters[counter] = true
			c.out.Table.Counters = append(c.out.Table.Counters, counter)
			c.out.RouteCounters[counter] = RouteLabels{Route: r.Name, Service: r.Service}
		}
		entries, endpoints := mapName(fam, svc.Name, len(svc.entries(fam))), endpointMapName(fam, svc.Name, svc.endpointMapSize(fam))
		ch.Rules = append(ch.Rules, nft.Rule{
			Comment: fmt.Sprintf("route %s: jhash to service %s", r.Name, svc.Name),
			Exprs:   balance(fam, proto, echo, svc, counter, entries, endpoints),
		})
	}
	c.out.Table.Chains = append(c.out.Table.Chains, ch)
	return name
}

// service emits a Service's maps and endpoint chains of one family: the
// entry map (entry -> endpoint mark) and the endpoint map (mark -> goto
// endpoint chain).
func (c *compiler) service(s *Service, fam family) {
	size := s.endpointMapSize(fam)
	endpoints := nft.Set{Name: endpointMapName(fam, s.Name, size), Kind: nft.MarkMap, Goto: map[uint32]string{}, Size: size}
	marks := map[uint16]uint32{} // slot -> mark, of the endpoints with an address of fam
	for _, ep := range s.Endpoints {
		addr := ep.addr(fam)
		if !addr.IsValid() {
			continue
		}
		counter := endpointCounterName(s.Name, ep.ID, addr)
		c.out.Table.Counters = append(c.out.Table.Counters, counter)
		c.out.EndpointCounters[counter] = EndpointLabels{Service: s.Name, ID: ep.ID, Addr: addr}
		chain := endpointChainName(fam, s.Name, ep.ID)
		c.out.Table.Chains = append(c.out.Table.Chains, nft.Chain{Name: chain, Rules: []nft.Rule{{
			Comment: endpointComment(s.Name, ep.ID, ep.Mark, addr),
			Exprs:   countAndAccept(counter),
		}}})
		endpoints.Goto[ep.Mark] = chain
		marks[uint16(ep.ID)] = ep.Mark
	}
	entries := s.entries(fam)
	if len(entries) == 0 {
		return
	}
	m := nft.Set{Name: mapName(fam, s.Name, len(entries)), Kind: nft.EntryMap, Marks: make([]uint32, len(entries))}
	for i, slot := range entries {
		m.Marks[i] = marks[slot]
	}
	c.out.Table.Sets = append(c.out.Table.Sets, m, endpoints)
}

// addSet emits a named set once.
func (c *compiler) addSet(s nft.Set) {
	if !c.sets[s.Name] {
		c.sets[s.Name] = true
		c.out.Table.Sets = append(c.out.Table.Sets, s)
	}
}
