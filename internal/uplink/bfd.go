package uplink

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/model"
)

// sessionConfig is the BFD session a router asks for.
func sessionConfig(r model.Router) bfd.SessionConfig {
	return bfd.SessionConfig{Peer: r.Address, Interface: r.Interface, DesiredMinTx: r.BFD.MinTx,
		RequiredMinRx: r.BFD.MinRx, DetectMultiplier: r.BFD.Multiplier}
}

// syncBFDLocked makes the BFD sessions match the routers with BFD on.
func (u *Uplink) syncBFDLocked() []error {
	var errs []error
	for addr, key := range u.sessions {
		r, ok := u.routers[addr]
		if ok && r.BFD.Enabled && sessionConfig(r).Key() == key {
			if err := u.bfd.Update(sessionConfig(r)); err != nil {
				errs = append(errs, fmt.Errorf("bfd %s: %w", addr, err))
			}
			continue
		}
		if err := u.bfd.Remove(key); err != nil {
			errs = append(errs, fmt.Errorf("bfd %s: %w", addr, err))
		}
		delete(u.sessions, addr)
		delete(u.bfdUp, addr)
	}
	for addr, r := range u.routers {
		if _, ok := u.sessions[addr]; ok || !r.BFD.Enabled {
			continue
		}
		cfg := sessionConfig(r)
		if err := u.bfd.Add(cfg); err != nil {
			errs = append(errs, fmt.Errorf("bfd %s: %w", addr, err))
			continue
		}
		u.sessions[addr] = cfg.Key()
	}
	return errs
}

// onBFD couples a BFD state change to BGP and the return path. The BFD
// server calls it from one goroutine, in order.
func (u *Uplink) onBFD(ev bfd.Event) {
	u.act.Lock()
	defer u.act.Unlock()
	addr := ev.Key.Peer
	u.mu.Lock()
	r, known := u.routers[addr]
	ctx := u.ctx
	wasUp := u.bfdUp[addr]
	up := ev.New == bfd.StateUp
	failed := !up && wasUp && !ev.PeerAdminDown
	if ev.PeerAdminDown {
		up = wasUp // RFC 5882 3.2: not a failure; keep the gateway as it was
	}
	u.bfdUp[addr] = up
	d := u.damping[addr]
	if d == nil {
		d = &damper{}
		u.damping[addr] = d
	}
	u.mu.Unlock()
	if !known || ctx == nil {
		return
	}
	u.log.Info("bfd session changed", "peer", addr, "interface", ev.Key.Interface, "from", ev.Old.String(),
		"to", ev.New.String(), "diag", ev.Diag.String(), "peer_admin_down", ev.PeerAdminDown)
	switch {
	case failed:
		d.failed(time.Now())
		if r.BGP != nil {
			u.mu.Lock()
			u.bgpDown[addr] = true
			u.mu.Unlock()
			if err := u.speaker.PeerDown(ctx, addr, "BFD down: "+ev.Diag.String()); err != nil {
				u.log.Error("bgp peer down", "peer", addr, "err", err)
			}
		}
	case up && !wasUp && r.BGP != nil && u.heldDown(addr):
		delay := d.upDelay(time.Now())
		u.log.Info("bgp peer up after bfd up", "peer", addr, "delay", delay.String())
		time.AfterFunc(delay, func() { u.bringUp(ctx, addr) })
	}
	u.publish()
}

func (u *Uplink) heldDown(addr netip.Addr) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bgpDown[addr]
}

// bringUp re-enables BGP for addr if BFD is still up.
func (u *Uplink) bringUp(ctx context.Context, addr netip.Addr) {
	u.act.Lock()
	defer u.act.Unlock()
	u.mu.Lock()
	up := u.bfdUp[addr] && u.bgpDown[addr]
	if up {
		delete(u.bgpDown, addr)
	}
	u.mu.Unlock()
	if !up || ctx.Err() != nil {
		return
	}
	if err := u.speaker.PeerUp(ctx, addr); err != nil {
		u.log.Error("bgp peer up", "peer", addr, "err", err)
	}
}

// damper delays recovery after repeated failures.
type damper struct {
	failures []time.Time
}

func (d *damper) failed(now time.Time) {
	d.failures = append(d.failures, now)
}

// upDelay is how long to wait before bringing BGP back: nothing after the
// first failure in DampingWindow, then 1 s, 2 s, 4 s... up to MaxUpDelay.
func (d *damper) upDelay(now time.Time) time.Duration {
	recent := d.failures[:0]
	for _, t := range d.failures {
		if now.Sub(t) < DampingWindow {
			recent = append(recent, t)
		}
	}
	d.failures = recent
	if len(recent) <= 1 {
		return 0
	}
	return min(time.Second<<(len(recent)-2), MaxUpDelay)
}
