package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/sllbrd/sllbrd/model"
)

// OnDemand is a Speaker that runs GoBGP only while some router has BGP:
// the first Apply with a BGP router starts it (and announces the VIPs
// given so far), an Apply without any stops it. An LB whose gateways are
// all static next hops therefore never starts GoBGP: none of its
// goroutines, RIB, policies or code pages. GoBGP v3 cannot end the Serve
// goroutine of a server once started, so every stop leaves one parked
// goroutine and its idle server behind until the process exits: switching
// between "some BGP" and "no BGP" is an operator's rare act, not a loop.
// The methods are those of Speaker and safe for concurrent use; Stats
// reports no peers and EstablishedSince false while GoBGP is not running.
type OnDemand struct {
	opts    []Option
	cfg     config
	updates *gatewayPublisher

	mu      sync.Mutex
	running *Speaker
	stopFwd chan struct{} // ends the running speaker's gateway forwarding
	vips    []netip.Addr  // last announced
	closed  bool
}

// NewOnDemand checks the options (the router id, if given, must be IPv4)
// and returns an OnDemand speaker that has not started GoBGP.
func NewOnDemand(opts ...Option) (*OnDemand, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.routerID.IsValid() && !cfg.routerID.Unmap().Is4() {
		return nil, fmt.Errorf("router id %q is not an IPv4 address", cfg.routerID)
	}
	return &OnDemand{opts: opts, cfg: cfg, updates: newGatewayPublisher()}, nil
}

// Running reports whether GoBGP runs.
func (o *OnDemand) Running() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.running != nil
}

func hasBGP(routers []model.Router) bool {
	for _, r := range routers {
		if r.BGP != nil {
			return true
		}
	}
	return false
}

// Apply starts GoBGP when the first router with BGP appears, applies the
// routers, and stops GoBGP when none has BGP any more.
func (o *OnDemand) Apply(ctx context.Context, routers []model.Router) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	want := hasBGP(routers)
	switch {
	case want && o.running == nil:
		sp, err := New(ctx, o.opts...)
		if err != nil {
			return err
		}
		o.cfg.logger.Info("bgp speaker started: a GatewayRouter has bgp")
		o.running, o.stopFwd = sp, make(chan struct{})
		go o.forward(sp.GatewayUpdates(), o.stopFwd)
		return errors.Join(sp.Apply(ctx, routers), sp.Announce(ctx, o.vips))
	case want:
		return o.running.Apply(ctx, routers)
	case o.running != nil:
		return o.stopLocked(ctx)
	}
	return nil
}

// stopLocked stops the running speaker (its peers close with a Cease) and
// publishes an empty gateway set. o.mu is held.
func (o *OnDemand) stopLocked(ctx context.Context) error {
	sp := o.running
	o.running = nil
	close(o.stopFwd)
	err := sp.Shutdown(ctx, 0)
	o.updates.publish(Gateways{})
	o.cfg.logger.Info("bgp speaker stopped: no GatewayRouter has bgp")
	return err
}

// forward hands the running speaker's gateway sets on until stop closes.
func (o *OnDemand) forward(in <-chan Gateways, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case g := <-in:
			o.mu.Lock()
			if o.stopFwd == stop { // still the running speaker
				o.updates.publish(g)
			}
			o.mu.Unlock()
		}
	}
}

// Announce sets the VIPs to advertise; they are kept for a speaker that
// starts later.
func (o *OnDemand) Announce(ctx context.Context, vips []netip.Addr) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	o.vips = append(o.vips[:0], vips...)
	if o.running == nil {
		return nil
	}
	return o.running.Announce(ctx, vips)
}

// PeerDown is Speaker.PeerDown; without GoBGP there is no peer to take down.
func (o *OnDemand) PeerDown(ctx context.Context, addr netip.Addr, reason string) error {
	if sp, err := o.current(); sp != nil || err != nil {
		if err != nil {
			return err
		}
		return sp.PeerDown(ctx, addr, reason)
	}
	return nil
}

// PeerUp is Speaker.PeerUp; without GoBGP there is nothing to bring up.
func (o *OnDemand) PeerUp(ctx context.Context, addr netip.Addr) error {
	if sp, err := o.current(); sp != nil || err != nil {
		if err != nil {
			return err
		}
		return sp.PeerUp(ctx, addr)
	}
	return nil
}

// EstablishedSince is Speaker.EstablishedSince (false without GoBGP).
func (o *OnDemand) EstablishedSince(addr netip.Addr) (time.Time, bool) {
	if sp, _ := o.current(); sp != nil {
		return sp.EstablishedSince(addr)
	}
	return time.Time{}, false
}

// Stats is Speaker.Stats (no peers without GoBGP).
func (o *OnDemand) Stats(ctx context.Context) ([]PeerStats, error) {
	if sp, _ := o.current(); sp != nil {
		return sp.Stats(ctx)
	}
	return nil, nil
}

// GatewayUpdates is Speaker.GatewayUpdates, across starts and stops.
func (o *OnDemand) GatewayUpdates() <-chan Gateways { return o.updates.ch }

// Shutdown is Speaker.Shutdown; without GoBGP it only waits the drain time
// (or until ctx ends), as the uplink's callers expect.
func (o *OnDemand) Shutdown(ctx context.Context, drain time.Duration) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return ErrClosed
	}
	o.closed = true
	sp := o.running
	if sp != nil {
		close(o.stopFwd)
		o.running = nil
	}
	o.mu.Unlock()
	if sp != nil {
		return sp.Shutdown(ctx, drain)
	}
	t := time.NewTimer(drain)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

func (o *OnDemand) current() (*Speaker, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, ErrClosed
	}
	return o.running, nil
}
