package classify

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/model"
)

// Miss says why a route does not match a packet: the first of the route's
// checks the packet fails.
type Miss struct {
	// Route is the route's index (see Route); -1 when the miss concerns no
	// single route (no route has the destination, or the packet is of a
	// kind that never matches).
	Route int
	// Check is the L34Route field that failed: "destinationCIDRs",
	// "protocols", "destinationPorts", "sourceCIDRs", "sourcePorts",
	// "byteMatches[i]" (i indexes the compiled route's byte matches), or
	// "packet" for a packet that never matches.
	Check string
	// Detail says what the packet has against what the route wants.
	Detail string
}

// Explain returns why p matches no route ranked above the route Lookup
// picks (every route, when Lookup picks none): one Miss per route whose
// destinations include p's destination, in precedence order, or a single
// Miss with Route -1 when no route has that destination. It is a
// diagnostic for people: Lookup decides, and Explain reuses its checks
// (sources, ports, byte matches) one route at a time, so it allocates and
// its cost grows with the routes of the destination.
func (t *Table) Explain(p *packet.Packet) []Miss {
	proto, ok := lookupProto(p)
	if !ok {
		return []Miss{{Route: -1, Check: "packet", Detail: "a " + p.Kind.String() + " packet never matches a route"}}
	}
	winner, won := t.Lookup(p)
	dst, src := p.Dst.Unmap(), p.Src.Unmap()
	var out []Miss
	seen := false
	for rank := range t.Len() {
		if won && rank == winner {
			break
		}
		r := &t.routes[rank]
		if !slices.ContainsFunc(r.Destinations, func(d netip.Prefix) bool { return d.Addr() == dst }) {
			continue
		}
		seen = true
		check, detail := t.rules[rank].firstFailure(r, p, proto, src)
		out = append(out, Miss{Route: rank, Check: check, Detail: detail})
	}
	if !seen && !won {
		return []Miss{{Route: -1, Check: "destinationCIDRs", Detail: "no route has destination " + dst.String()}}
	}
	return out
}

// lookupProto is the protocol Lookup keys p on (echoProto for an echo),
// and false for packets Lookup never matches.
func lookupProto(p *packet.Packet) (model.Protocol, bool) {
	switch {
	case p.IsEcho():
		return echoProto, true
	case p.Kind == packet.KindTransport, p.Kind == packet.KindFirstFragment, p.Kind == packet.KindICMPError:
		return p.Proto, true
	}
	return 0, false
}

// firstFailure returns the first check of route r (whose destinations hold
// p's) that p fails, in the order the index and matchesFlow apply them;
// ("", "") when p passes them all.
func (rl *rule) firstFailure(r *model.Route, p *packet.Packet, proto model.Protocol, src netip.Addr) (check, detail string) {
	echo := proto == echoProto
	switch {
	case !echo && !slices.Contains(r.Protocols, proto):
		return "protocols", proto.String() + " is not one of " + join(r.Protocols, model.Protocol.String)
	case !echo && !inRanges(rl.dstPorts, p.DstPort):
		return "destinationPorts", strconv.Itoa(int(p.DstPort)) + " is not in " + join(rl.dstPorts, portString)
	case !rl.admitsSource(src):
		return "sourceCIDRs", src.String() + " is not in " + join(r.Sources, netip.Prefix.String)
	case echo:
		return "", ""
	case !inRanges(rl.srcPorts, p.SrcPort):
		return "sourcePorts", strconv.Itoa(int(p.SrcPort)) + " is not in " + join(rl.srcPorts, portString)
	}
	for i := range rl.bytes {
		m := &rl.bytes[i]
		if m.Protocol == proto && !bytesHold(m, p.L4) {
			return "byteMatches[" + strconv.Itoa(i) + "]", byteMatchFailure(m, p.L4)
		}
	}
	return "", ""
}

// byteMatchFailure says what the packet holds where m reads.
func byteMatchFailure(m *model.ByteMatch, l4 []byte) string {
	v, ok := byteField(m, l4)
	if !ok {
		return m.String() + ": the transport bytes end at " + strconv.Itoa(len(l4)) + ", before byte " + strconv.Itoa(int(m.Offset)+int(m.Size))
	}
	return m.String() + ": the packet has 0x" + strconv.FormatUint(uint64(v), 16)
}

func portString(r model.PortRange) string {
	if r.From == r.To {
		return strconv.Itoa(int(r.From))
	}
	return strconv.Itoa(int(r.From)) + "-" + strconv.Itoa(int(r.To))
}

func join[T any](items []T, str func(T) string) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = str(it)
	}
	return strings.Join(parts, ", ")
}
