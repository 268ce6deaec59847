package uplink

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/model"
)

// coupling is the state of one router with BFD enabled. It lives as long
// as the router's BFD session: a router deleted, with BFD switched off or
// with a new session key gets a fresh one.
type coupling struct {
	session bfd.Key
	disc    uint32    // the session's local discriminator: this instance of it
	up      bool      // the BFD session is Up
	upSince time.Time // when it last came Up
	damper  damper
	stop    func() bool // cancels the pending BGP bring-up; nil if none
	seq     uint64      // bumped on every change; a bring-up runs only for its own
}

// cancel stops the pending bring-up, if any, so that no older timer acts
// after this change.
func (c *coupling) cancel() {
	c.seq++
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
}

// sessionConfig is the BFD session a router asks for. A multihop session
// (RFC 5883) is sent from the router's BFD local address when set, else
// from the source address the kernel's route to the peer gives.
func sessionConfig(r model.Router) bfd.SessionConfig {
	return bfd.SessionConfig{Peer: r.Address, Interface: r.Interface, Local: r.BFD.LocalAddress,
		Multihop: r.BFD.Multihop, DesiredMinTx: r.BFD.MinTx, RequiredMinRx: r.BFD.MinRx,
		DetectMultiplier: r.BFD.Multiplier}
}

// syncBFDLocked makes the BFD sessions match the routers with BFD on. u.mu
// is held.
func (u *Uplink) syncBFDLocked() []error {
	var errs []error
	for addr, c := range u.peers {
		r, ok := u.routers[addr]
		if ok && r.BFD.Enabled && sessionConfig(r).Key() == c.session {
			if err := u.bfd.Update(sessionConfig(r)); err != nil {
				errs = append(errs, fmt.Errorf("bfd %s: %w", addr, err))
			}
			continue
		}
		if err := u.bfd.Remove(c.session); err != nil {
			errs = append(errs, fmt.Errorf("bfd %s: %w", addr, err))
		}
		c.cancel()
		delete(u.peers, addr)
	}
	for addr, r := range u.routers {
		if _, ok := u.peers[addr]; ok || !r.BFD.Enabled {
			continue
		}
		cfg := sessionConfig(r)
		if err := u.bfd.Add(cfg); err != nil {
			errs = append(errs, fmt.Errorf("bfd %s: %w", addr, err))
			continue
		}
		st, _ := u.bfd.Stats(cfg.Key())
		u.peers[addr] = &coupling{session: cfg.Key(), disc: st.LocalDiscriminator}
	}
	return errs
}

// onBFD couples a BFD state change to BGP and the return path. The BFD
// server calls it from one goroutine, in order.
func (u *Uplink) onBFD(ev bfd.Event) {
	if u.forwardOther(ev) {
		return
	}
	u.act.Lock()
	defer u.act.Unlock()
	addr := ev.Key.Peer
	now := u.now()
	u.mu.Lock()
	c, r, ctx := u.peers[addr], u.routers[addr], u.ctx
	if c == nil || c.session != ev.Key || c.disc != ev.LocalDiscriminator || ctx == nil || u.closed {
		u.mu.Unlock()
		return // a removed session's last words, or not running
	}
	wasUp := c.up
	up := ev.New == bfd.StateUp
	if ev.PeerAdminDown {
		up = wasUp // RFC 5882 3.2: not a failure; keep the gateway as it was
	}
	failed := !up && wasUp
	c.up = up
	c.cancel()
	started := c.upSince
	if up && !wasUp {
		c.upSince = now
	}
	u.mu.Unlock()
	u.log.Info("bfd session changed", "peer", addr, "interface", ev.Key.Interface, "from", ev.Old.String(),
		"to", ev.New.String(), "diag", ev.Diag.String(), "peer_admin_down", ev.PeerAdminDown)
	switch {
	case failed && r.BGP != nil:
		if est, ok := u.speaker.EstablishedSince(addr); ok && est.After(started) {
			started = est
		}
		u.countFailure(c, addr, now, started)
		if err := u.speaker.PeerDown(ctx, addr, ev.Diag.String()); err != nil {
			u.log.Error("bgp peer down", "peer", addr, "err", err)
		}
	case failed:
		u.countFailure(c, addr, now, started)
	case up && !wasUp && r.BGP != nil:
		u.scheduleUp(ctx, c, addr, now)
	}
	u.publish()
}

// forwardOther hands ev to the HandleOtherSessions function unless it is
// an event of one of the Uplink's sessions now, and reports whether it did.
// An event of a router session removed since goes there too: onBFD would
// ignore it.
func (u *Uplink) forwardOther(ev bfd.Event) bool {
	u.mu.Lock()
	c, others := u.peers[ev.Key.Peer], u.others
	u.mu.Unlock()
	if c != nil && c.session == ev.Key && c.disc == ev.LocalDiscriminator {
		return false
	}
	if others != nil {
		others(ev)
	}
	return true
}

// countFailure records a BFD failure for damping.
func (u *Uplink) countFailure(c *coupling, addr netip.Addr, now, started time.Time) {
	u.mu.Lock()
	counted := c.damper.failed(now, started)
	u.mu.Unlock()
	if !counted {
		u.log.Info("bfd down soon after the session started; not counted for damping", "peer", addr,
			"grace", EarlyDownGrace.String())
	}
}

// scheduleUp brings BGP back after the damping delay, replacing any bring-up
// still pending.
func (u *Uplink) scheduleUp(ctx context.Context, c *coupling, addr netip.Addr, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.scheduleUpLocked(ctx, c, addr, now)
}

// scheduleUpLocked is scheduleUp with u.mu held; c has no pending bring-up.
func (u *Uplink) scheduleUpLocked(ctx context.Context, c *coupling, addr netip.Addr, now time.Time) {
	delay := c.damper.upDelay(now)
	seq := c.seq
	c.stop = u.after(delay, func() { u.bringUp(ctx, c, addr, seq) })
	u.log.Info("bgp peer up after bfd up", "peer", addr, "delay", delay.String())
}

// bringUp re-enables BGP for addr if nothing changed since it was scheduled.
func (u *Uplink) bringUp(ctx context.Context, c *coupling, addr netip.Addr, seq uint64) {
	u.act.Lock()
	defer u.act.Unlock()
	u.mu.Lock()
	current := u.peers[addr] == c && c.seq == seq && c.up && !u.closed
	if current {
		c.stop = nil
	}
	u.mu.Unlock()
	if !current || ctx.Err() != nil {
		return
	}
	if err := u.speaker.PeerUp(ctx, addr); err != nil {
		u.log.Error("bgp peer up", "peer", addr, "err", err)
	}
}
