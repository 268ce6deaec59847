package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/liveness"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/model"
)

// bfdRetry is how often sessions that the BFD server refused are tried
// again (a router's session with the same key still there, say).
const bfdRetry = time.Second

// bfdServer is what the BFD probes need of the SLLBR's BFD server
// (*bfd.Server, owned by internal/uplink).
type bfdServer interface {
	Add(bfd.SessionConfig) error
	Update(bfd.SessionConfig) error
	Remove(bfd.Key) error
	Stats(bfd.Key) (bfd.Stats, bool)
}

// bfdLiveness probes endpoint addresses with BFD (docs/liveness.md, probe
// kinds): one single-hop session per address on the SLLBR's BFD server
// (DesiredMinTx = RequiredMinRx = Interval, DetectMultiplier = Multiplier)
// and a bfdMachine per address that the session's events and the clock
// drive. The server and its event handler come from bind (the Uplink owns
// them); until then only the wanted sessions are recorded. Failed server
// calls are logged, counted and retried; they never stop the SLLBR, and an
// address whose session could not be added is not probed (not dead). Its
// methods are safe for concurrent use; onChange is called without its lock.
type bfdLiveness struct {
	log      *slog.Logger
	now      func() time.Time
	onChange func([]bfdChange)
	wake     chan struct{}

	mu       sync.Mutex
	server   bfdServer
	want     map[netip.Addr]bfd.SessionConfig // the sessions to run, by address
	configs  map[netip.Addr]liveness.Config   // and the configuration each probes with
	sessions map[netip.Addr]*bfdProbe         // the sessions added
	routers  map[netip.Addr]bool              // endpoint addresses not probed: a gateway router has them
	failing  map[netip.Addr]string            // the last error of each address whose session is not as wanted
	counts   metrics.LivenessBFDCounts
}

// bfdProbe is one session added to the server and its address's machine.
type bfdProbe struct {
	key     bfd.Key
	disc    uint32 // the session instance (bfd.Event.LocalDiscriminator)
	cfg     bfd.SessionConfig
	machine *bfdMachine
}

func newBFDLiveness(log *slog.Logger, now func() time.Time, onChange func([]bfdChange)) *bfdLiveness {
	return &bfdLiveness{log: log, now: now, onChange: onChange, wake: make(chan struct{}, 1),
		want: map[netip.Addr]bfd.SessionConfig{}, configs: map[netip.Addr]liveness.Config{},
		sessions: map[netip.Addr]*bfdProbe{}, routers: map[netip.Addr]bool{}, failing: map[netip.Addr]string{}}
}

// bind makes server the one the sessions run on, once; later calls do
// nothing. handle sets the function that receives the server's events of
// sessions its owner does not hold (uplink.Uplink.HandleOtherSessions); it
// is set before the first session is added.
func (b *bfdLiveness) bind(server bfdServer, handle func(func(bfd.Event))) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.server != nil {
		return
	}
	handle(b.event)
	b.server = server
	b.syncLocked()
}

// set makes the probed addresses those of targets (merged per address with
// liveness.Config.Stricter), but for the addresses of routers: a gateway
// router's BFD session has that peer address already, so such an endpoint
// is not BFD-probed (logged, counted). A link-local address is probed over
// the Gateway's network when it has exactly one. Machines of addresses kept
// keep their state; new ones start alive.
func (b *bfdLiveness) set(targets []liveness.Target, routers []model.Router, networks []model.Network) {
	isRouter := map[netip.Addr]bool{}
	for _, r := range routers {
		isRouter[r.Address.Unmap()] = true
	}
	configs := map[netip.Addr]liveness.Config{}
	skipped := map[netip.Addr]bool{}
	for _, t := range targets {
		a := t.Addr.Unmap()
		if isRouter[a] {
			skipped[a] = true
			continue
		}
		if c, ok := configs[a]; !ok || t.Config.Stricter(c) {
			configs[a] = t.Config
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for a := range skipped {
		if !b.routers[a] {
			b.log.Warn("endpoint liveness: endpoint address is a gateway router's: not probed by BFD", "address", a)
		}
	}
	b.routers = skipped
	b.configs = configs
	b.want = make(map[netip.Addr]bfd.SessionConfig, len(configs))
	for a, c := range configs {
		cfg, err := bfdSessionConfig(a, c, networks)
		if err != nil {
			b.failLocked(a, "invalid", err)
			continue
		}
		b.want[a] = cfg
	}
	b.syncLocked()
}

// bfdSessionConfig is the session that probes a with c.
func bfdSessionConfig(a netip.Addr, c liveness.Config, networks []model.Network) (bfd.SessionConfig, error) {
	cfg := bfd.SessionConfig{Peer: a, DesiredMinTx: c.Interval, RequiredMinRx: c.Interval, DetectMultiplier: uint8(c.Multiplier)}
	if c.Multiplier < 1 || c.Multiplier > 255 {
		return cfg, fmt.Errorf("multiplier %d: BFD takes 1..255", c.Multiplier)
	}
	if a.IsLinkLocalUnicast() {
		if len(networks) != 1 {
			return cfg, fmt.Errorf("link-local address: the Gateway has %d networks, not one to send on", len(networks))
		}
		cfg.Interface = networks[0].Interface
	}
	return cfg, cfg.Validate()
}

// syncLocked adds, updates and removes sessions so that they match b.want.
// Called with b.mu held.
func (b *bfdLiveness) syncLocked() {
	if b.server == nil {
		return
	}
	now := b.now()
	for a, s := range b.sessions {
		cfg, ok := b.want[a]
		switch {
		case ok && cfg == s.cfg:
			s.machine.cfg = b.configs[a]
			continue
		case ok && cfg.Key() == s.key:
			if err := b.server.Update(cfg); err != nil {
				b.failLocked(a, "update", err)
				continue
			}
			s.cfg, s.machine.cfg = cfg, b.configs[a]
			delete(b.failing, a)
			continue
		}
		if err := b.server.Remove(s.key); err != nil {
			b.failLocked(a, "remove", err) // its key is free anyway: the server forgot it or never had it
		}
		delete(b.sessions, a)
	}
	for a, cfg := range b.want {
		if _, ok := b.sessions[a]; ok {
			continue
		}
		if err := b.server.Add(cfg); err != nil {
			b.failLocked(a, "add", err)
			continue
		}
		st, _ := b.server.Stats(cfg.Key())
		b.sessions[a] = &bfdProbe{key: cfg.Key(), disc: st.LocalDiscriminator, cfg: cfg, machine: newBFDMachine(b.configs[a], now)}
		delete(b.failing, a)
	}
	for a := range b.failing {
		if _, ok := b.want[a]; !ok {
			delete(b.failing, a)
		}
	}
	b.poke()
}

// failLocked counts and logs (once per different error) a failed session
// operation on a. Called with b.mu held.
func (b *bfdLiveness) failLocked(a netip.Addr, op string, err error) {
	switch op {
	case "add":
		b.counts.AddErrors++
	case "update":
		b.counts.UpdateErrors++
	case "remove":
		b.counts.RemoveErrors++
	default:
		b.counts.InvalidConfigs++
	}
	if msg := op + ": " + err.Error(); b.failing[a] != msg {
		b.log.Error("endpoint liveness: BFD session of an endpoint address; it is not probed by BFD until this works", "address", a, "op", op, "err", err)
		if op != "remove" {
			b.failing[a] = msg
		}
	}
}

// event applies a BFD event of one of b's sessions (the others' are
// ignored). The server calls it on its event goroutine, in order.
func (b *bfdLiveness) event(ev bfd.Event) {
	b.mu.Lock()
	s := b.sessions[ev.Key.Peer]
	if s == nil || s.key != ev.Key || s.disc != ev.LocalDiscriminator {
		b.mu.Unlock()
		return // a router's late event, or a removed session's
	}
	if ev.PeerAdminDown {
		b.counts.PeerStopped++
	}
	c, changed := s.machine.session(b.now(), ev.Transition)
	c.Addr = ev.Key.Peer
	b.countLocked(c, changed)
	b.poke() // the next deadline may have changed
	b.mu.Unlock()
	if changed {
		b.report([]bfdChange{c})
	}
}

// countLocked counts a transition to dead by its cause.
func (b *bfdLiveness) countLocked(c bfdChange, changed bool) {
	if !changed || c.Alive {
		return
	}
	switch c.cause {
	case bfdNeverUp:
		b.counts.NeverUp++
	default:
		b.counts.SessionDown++
	}
}

// tick applies the passing of time to every machine, retries the sessions
// that failed, and returns when it wants to be called next (zero: not
// before something changes).
func (b *bfdLiveness) tick() time.Time {
	b.mu.Lock()
	now := b.now()
	if len(b.failing) > 0 {
		b.syncLocked()
	}
	var cs []bfdChange
	var next time.Time
	for a, s := range b.sessions {
		if c, ok := s.machine.tick(now); ok {
			c.Addr = a
			b.countLocked(c, true)
			cs = append(cs, c)
		}
		if d := s.machine.deadline(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	if retry := now.Add(bfdRetry); len(b.failing) > 0 && (next.IsZero() || retry.Before(next)) {
		next = retry
	}
	b.mu.Unlock()
	if len(cs) > 0 {
		b.report(cs)
	}
	return next
}

// bfdLoggedChanges is how many transitions at once are logged one by one at
// info level; more are one line, each then at debug level (the prober's
// rule: an SLLBR whose own link breaks finds every endpoint dead at once).
const bfdLoggedChanges = 16

// report logs transitions and hands them to onChange.
func (b *bfdLiveness) report(cs []bfdChange) {
	level := slog.LevelInfo
	if len(cs) > bfdLoggedChanges {
		b.log.Info("endpoint liveness: BFD: many addresses changed at once (each at debug level)", "changes", len(cs))
		level = slog.LevelDebug
	}
	for _, c := range cs {
		if c.Alive {
			b.log.Log(context.Background(), level, "endpoint liveness: BFD: address alive", "addr", c.Addr, "up_for", c.Detection)
		} else {
			b.log.Log(context.Background(), level, "endpoint liveness: BFD: address dead", "addr", c.Addr, "cause", c.cause.String(),
				"diag", c.diag.String(), "after", c.Detection)
		}
	}
	b.onChange(cs)
}

// run ticks b until ctx ends, at the machines' deadlines and whenever
// something changed.
func (b *bfdLiveness) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := time.Hour
		if next := b.tick(); !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		case <-timer.C:
		}
	}
}

// poke wakes run to recompute its deadline.
func (b *bfdLiveness) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// dead returns the addresses dead now.
func (b *bfdLiveness) dead() map[netip.Addr]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[netip.Addr]bool{}
	for a, s := range b.sessions {
		if !s.machine.alive {
			out[a] = true
		}
	}
	return out
}

// states returns each probed address's state.
func (b *bfdLiveness) states() map[netip.Addr]liveness.State {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[netip.Addr]liveness.State, len(b.sessions))
	for a, s := range b.sessions {
		st := s.machine.state()
		st.Addr = a
		out[a] = st
	}
	return out
}

// stats returns the counters, how many endpoint addresses are not probed
// for being a router's, each session's state and how many sessions' sockets
// failed (a session that cannot open its socket, e.g. for want of file
// descriptors, never comes Up and its address is found dead).
func (b *bfdLiveness) stats() metrics.LivenessBFDCounts {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.counts
	n.RouterAddresses = len(b.routers)
	n.SessionUp = make(map[netip.Addr]bool, len(b.sessions))
	for a, s := range b.sessions {
		n.SessionUp[a] = s.machine.up
		if b.server == nil {
			continue
		}
		if st, ok := b.server.Stats(s.key); ok && st.SocketError != "" {
			n.SocketErrors++
		}
	}
	return n
}
