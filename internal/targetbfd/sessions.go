package targetbfd

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/tableroute"
	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// Gateway is one Gateway whose desired configuration asks for liveness,
// with what targetnet holds for it in the pod.
type Gateway struct {
	Name string
	// Interval is each side's transmit interval and required receive
	// interval; Multiplier the Detect Mult (bfd bounds: 1..255).
	Interval   time.Duration
	Multiplier int
	// Subnets are the Gateway's network-subnets: the pod's address in
	// them is the sessions' source.
	Subnets []netip.Prefix
	// NextHops are the next hops in place in the Gateway's table (both
	// families; targetnet.GatewayResult.NextHops).
	NextHops []netip.Addr
	// Down are the next hops left out of the table because they were
	// found down (Runner.Down; targetnet.GatewayResult.Down): they keep
	// their sessions, so that they come back when these are Up.
	Down []netip.Addr
	// AllDown lists the families whose next hops were all found down and
	// all kept in the table (targetnet.GatewayResult.AllDown).
	AllDown []targetnet.Family
	// Interfaces names the interface of the next hops, per family
	// (targetnet.GatewayResult.Interfaces).
	Interfaces map[targetnet.Family]string
}

// detection is how long the SLLBR waits before it finds the pod dead.
func (g Gateway) detection() time.Duration { return g.Interval * time.Duration(g.Multiplier) }

// stricter reports whether g's timing finds a failure sooner than o's:
// shorter detection, then shorter interval.
func (g Gateway) stricter(o Gateway) bool {
	if g.detection() != o.detection() {
		return g.detection() < o.detection()
	}
	return g.Interval < o.Interval
}

// Addresses are the addresses of the namespace's interfaces, by interface
// name (targetnet.Address.Prefix).
type Addresses map[string][]netip.Prefix

// Want is the session set of some Gateways.
type Want struct {
	// Sessions are the sessions, by key.
	Sessions map[bfd.Key]bfd.SessionConfig
	// Unserved are next hops that get no session: no interface of their
	// family is known, or their Gateway's timing is out of bfd's bounds.
	Unserved []netip.Addr
	// Notes say why a session has no source address of ours (the kernel
	// chooses it) or a next hop none: one line each, for logs.
	Notes []string
}

// Sessions returns the session set of gws: one single-hop session per next
// hop (in place or left out as down), on the interface of its family, from the pod's address there (addrs:
// the namespace's; nil: the kernel chooses every source). A next hop of
// several Gateways gets the session of the strictest (ties: the first by
// name).
func Sessions(gws []Gateway, addrs Addresses) Want {
	gws = slices.Clone(gws)
	slices.SortStableFunc(gws, func(a, b Gateway) int { return cmp.Compare(a.Name, b.Name) })
	best := map[netip.Addr]int{} // next hop -> index in gws of its strictest Gateway
	var order []netip.Addr
	w := Want{Sessions: map[bfd.Key]bfd.SessionConfig{}}
	for i, g := range gws {
		if err := g.validate(); err != nil {
			w.Unserved = append(w.Unserved, g.NextHops...)
			w.Unserved = append(w.Unserved, g.Down...)
			w.Notes = append(w.Notes, err.Error())
			continue
		}
		for _, h := range slices.Concat(g.NextHops, g.Down) {
			h = h.Unmap().WithZone("")
			j, seen := best[h]
			switch {
			case !seen:
				order = append(order, h)
				best[h] = i
			case g.stricter(gws[j]):
				best[h] = i
			}
		}
	}
	for _, h := range order {
		g := gws[best[h]]
		f := tableroute.FamilyOf(h)
		ifname := g.Interfaces[f]
		if ifname == "" {
			w.Unserved = append(w.Unserved, h)
			w.Notes = append(w.Notes, fmt.Sprintf("next hop %s of gateway %s: no interface of %s known: no session", h, g.Name, f))
			continue
		}
		local, note := localAddress(addrs, ifname, f, g.Subnets)
		if note != "" {
			w.Notes = append(w.Notes, fmt.Sprintf("next hop %s of gateway %s: %s: the kernel chooses the source", h, g.Name, note))
		}
		cfg := bfd.SessionConfig{Peer: h, Local: local, Interface: ifname,
			DesiredMinTx: g.Interval, RequiredMinRx: g.Interval, DetectMultiplier: uint8(g.Multiplier)}
		w.Sessions[cfg.Key()] = cfg
	}
	return w
}

// validate checks what bfd needs of a Gateway's timing (the annotation's
// validation is stricter; this guards the conversion).
func (g Gateway) validate() error {
	if g.Interval < time.Millisecond || g.Interval > time.Minute || g.Multiplier < 1 || g.Multiplier > 255 {
		return fmt.Errorf("gateway %s: interval %v and multiplier %d out of bounds: no session with its next hops", g.Name, g.Interval, g.Multiplier)
	}
	return nil
}

// localAddress returns the one address of family f on ifname within
// subnets; note says why there is none.
func localAddress(addrs Addresses, ifname string, f targetnet.Family, subnets []netip.Prefix) (netip.Addr, string) {
	if addrs == nil {
		return netip.Addr{}, "the interfaces' addresses are not known"
	}
	var found []netip.Addr
	for _, p := range addrs[ifname] {
		a := p.Addr().Unmap()
		if tableroute.FamilyOf(a) == f && slices.ContainsFunc(subnets, func(s netip.Prefix) bool { return s.Contains(a) }) && !slices.Contains(found, a) {
			found = append(found, a)
		}
	}
	switch len(found) {
	case 1:
		return found[0], ""
	case 0:
		return netip.Addr{}, fmt.Sprintf("no %s address on %s in the subnets %v", f, ifname, subnets)
	}
	return netip.Addr{}, fmt.Sprintf("%s has %d %s addresses in the subnets %v", ifname, len(found), f, subnets)
}
