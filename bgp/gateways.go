package bgp

import (
	"net/netip"
	"slices"
	"sync"
)

// Gateway is one peer that currently advertises a default route to us.
type Gateway struct {
	Router    string     // GatewayRouter name
	Peer      netip.Addr // BGP neighbour address
	NextHop   netip.Addr // next hop it advertised (link-local ones carry the interface as zone)
	Interface string     // the router's interface
}

// Gateways is the set of gateways with a default route, per family, each
// list sorted by peer address. The lead installs them as ECMP routes.
type Gateways struct {
	IPv4 []Gateway // advertised 0.0.0.0/0
	IPv6 []Gateway // advertised ::/0
}

// Equal reports whether g and o hold the same gateways.
func (g Gateways) Equal(o Gateways) bool {
	return slices.Equal(g.IPv4, o.IPv4) && slices.Equal(g.IPv6, o.IPv6)
}

func sortGateways(l []Gateway) {
	slices.SortFunc(l, func(a, b Gateway) int {
		if c := a.Peer.Compare(b.Peer); c != 0 {
			return c
		}
		return a.NextHop.Compare(b.NextHop)
	})
}

// gatewayPublisher keeps the last published set and hands changes to one
// consumer through a one-slot channel: a slow consumer skips intermediate
// sets and always receives the latest.
type gatewayPublisher struct {
	mu   sync.Mutex
	last Gateways
	ch   chan Gateways
}

func newGatewayPublisher() *gatewayPublisher {
	return &gatewayPublisher{ch: make(chan Gateways, 1)}
}

// publish stores g and signals it if it differs from the last set. It never
// blocks.
func (p *gatewayPublisher) publish(g Gateways) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g.Equal(p.last) {
		return false
	}
	p.last = g
	select {
	case <-p.ch:
	default:
	}
	p.ch <- g
	return true
}

func (p *gatewayPublisher) current() Gateways {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Gateways{IPv4: slices.Clone(p.last.IPv4), IPv6: slices.Clone(p.last.IPv6)}
}
