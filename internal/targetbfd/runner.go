package targetbfd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// ShutdownTimeout bounds how long a Runner whose context ended sends
// AdminDown: each session's first AdminDown packet goes at once, the rest
// (up to its Detect Mult) at its rate while time remains.
const ShutdownTimeout = time.Second

// restartBackoff is the wait before a failed server is started again:
// 1 s doubling to 30 s.
var restartBackoff = [2]time.Duration{time.Second, 30 * time.Second}

// Runner runs one bfd.Server in one network namespace and keeps its
// sessions equal to Sessions of the Gateways last Set (package
// documentation). Set, Stats and Sessions are safe for concurrent use; Run
// runs once.
type Runner struct {
	ns       *os.File // nil: the caller's namespace
	nsFD     int      // ns's descriptor (0: none)
	log      *slog.Logger
	counters *Counters
	kick     chan struct{}

	mu       sync.Mutex
	want     []Gateway
	srv      *bfd.Server // running, for Stats
	unserved int
	notes    string    // the last Want.Notes logged
	addrs    Addresses // last read of the namespace's addresses
	synced   []Gateway // the Gateways of the last sync, for the routes' logs

	// What the sessions say of the next hops (down.go).
	now    func() time.Time
	downCh chan struct{} // DownChanged
	hmu    sync.Mutex
	health *health
	down   map[netip.Addr]Cause // the verdicts last given
}

// Option configures a Runner.
type Option func(*Runner)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(r *Runner) { r.log = l } }

// WithCounters makes the Runner count into c, shared with other Runners
// (default: counters of its own).
func WithCounters(c *Counters) Option { return func(r *Runner) { r.counters = c } }

// NewRunner returns a Runner for the network namespace of ns, an open file
// of it (the node daemon's: a pod's), which it closes when Run returns;
// nil: the calling process's own namespace (the sidecar's). Nothing runs
// before Run.
func NewRunner(ns *os.File, opts ...Option) *Runner {
	r := &Runner{ns: ns, log: slog.Default(), kick: make(chan struct{}, 1),
		now: time.Now, downCh: make(chan struct{}, 1), health: newHealth(), down: map[netip.Addr]Cause{}}
	if ns != nil {
		r.nsFD = int(ns.Fd())
	}
	for _, o := range opts {
		o(r)
	}
	if r.counters == nil {
		r.counters = NewCounters()
	}
	return r
}

// Set hands over the Gateways with liveness of the configuration applied,
// with what targetnet holds for each; Run makes the sessions follow soon.
// It never blocks.
func (r *Runner) Set(gws []Gateway) {
	r.mu.Lock()
	r.want = slices.Clone(gws)
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Stats returns the Runner's sessions and its counters' counts (shared
// with the other Runners of its Counters).
func (r *Runner) Stats() Stats { return r.counters.Stats(r) }

// Sessions returns a snapshot of the running server's sessions (none
// before Run has started one).
func (r *Runner) Sessions() []bfd.Stats {
	r.mu.Lock()
	srv := r.srv
	r.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.AllStats()
}

// Run runs the server until ctx ends, starting it again with its sessions
// when it fails; then every session goes AdminDown (ShutdownTimeout) and
// the namespace's file is closed. It returns nil.
func (r *Runner) Run(ctx context.Context) error {
	if r.ns != nil {
		defer r.ns.Close()
	}
	for failures := 1; ; failures++ {
		err := r.serve(ctx)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		r.counters.serverFailures.Add(1)
		wait := min(restartBackoff[0]<<min(failures-1, 10), restartBackoff[1])
		r.log.Error("the BFD server failed; starting it again", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// serve runs one server until ctx ends (nil) or the server fails.
func (r *Runner) serve(ctx context.Context) error {
	srv := bfd.NewServer(bfd.WithEventHandler(r.onEvent), bfd.WithLogger(r.log))
	grace := time.NewTimer(time.Hour) // the next start grace to end
	defer grace.Stop()
	arm := func(next time.Time) {
		grace.Stop()
		if !next.IsZero() {
			grace.Reset(next.Sub(r.now()))
		}
	}
	runCtx, cancel := context.WithCancel(context.Background()) // Shutdown ends it first
	defer cancel()
	entered, exited := make(chan error, 1), make(chan error, 1)
	go r.runServer(runCtx, srv, entered, exited)
	if err := <-entered; err != nil {
		return err
	}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	defer r.counters.retire(r, srv)
	k := newKeeper(srv)
	arm(r.sync(k, srv, true))
	for {
		select {
		case <-ctx.Done():
			sctx, done := context.WithTimeout(context.Background(), ShutdownTimeout)
			if err := srv.Shutdown(sctx); err != nil {
				r.log.Debug("BFD server stopped", "err", err)
			}
			done()
			return nil
		case <-r.kick:
			arm(r.sync(k, srv, false))
		case <-grace.C:
			arm(r.evaluate())
		case err := <-exited:
			if err == nil {
				err = errors.New("Run returned")
			}
			return fmt.Errorf("the BFD server stopped on its own: %w", err)
		}
	}
}

// runServer runs srv on this goroutine's thread, first moved into the
// Runner's namespace: every socket of srv is created there (bfd.Server.Run).
func (r *Runner) runServer(ctx context.Context, srv *bfd.Server, entered, exited chan<- error) {
	if r.ns != nil {
		runtime.LockOSThread()
		leave, err := enter(r.nsFD)
		if err != nil {
			entered <- fmt.Errorf("enter the network namespace %s: %w", r.ns.Name(), err)
			return
		}
		defer leave()
	}
	entered <- nil
	exited <- srv.Run(ctx)
}

// enter moves the calling thread, locked, into the network namespace
// nsFD; leave moves it back and unlocks it. A thread that cannot be moved
// back stays locked, so the Go runtime ends it with its goroutine: no
// thread is ever left in the namespace for other goroutines. (Going back
// matters: the runtime cannot end the main thread, which it keeps, locked
// and idle, where it is, and that would keep the pod's namespace alive.)
func enter(nsFD int) (leave func(), err error) {
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("open the thread's own network namespace: %w", err)
	}
	if err := unix.Setns(nsFD, unix.CLONE_NEWNET); err != nil {
		own.Close()
		runtime.UnlockOSThread()
		return nil, err
	}
	return func() {
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		own.Close()
	}, nil
}

// sync makes k's server (srv; fresh: just started) hold the sessions of
// the Gateways last Set, and returns when a start grace ends next.
func (r *Runner) sync(k *keeper, srv *bfd.Server, fresh bool) time.Time {
	r.mu.Lock()
	gws, synced := r.want, r.synced
	r.synced = gws
	r.mu.Unlock()
	var addrs Addresses
	if slices.ContainsFunc(gws, func(g Gateway) bool { return len(g.NextHops)+len(g.Down) > 0 }) {
		addrs = r.addresses()
	}
	w := Sessions(gws, addrs)
	c := r.setSessions(k, srv, w, fresh)
	notes := strings.Join(w.Notes, "; ")
	r.mu.Lock()
	r.unserved = len(w.Unserved)
	logNotes := notes != r.notes
	r.notes = notes
	r.mu.Unlock()
	r.logRoutes(synced, gws)
	r.counters.sessionFailures.Add(uint64(c.failed))
	for _, key := range c.added {
		cfg := w.Sessions[key]
		r.log.Info("BFD session added", "peer", key.Peer, "interface", key.Interface, "local", cfg.Local,
			"interval", cfg.DesiredMinTx, "multiplier", cfg.DetectMultiplier)
	}
	for _, key := range c.updated {
		cfg := w.Sessions[key]
		r.log.Info("BFD session changed", "peer", key.Peer, "interface", key.Interface, "local", cfg.Local,
			"interval", cfg.DesiredMinTx, "multiplier", cfg.DetectMultiplier)
	}
	for _, key := range c.removed {
		r.log.Info("BFD session removed: AdminDown sent to the peer", "peer", key.Peer, "interface", key.Interface)
	}
	if c.err != nil {
		r.log.Warn("BFD sessions not all set; tried again at the next change", "err", c.err)
	}
	if logNotes && notes != "" {
		r.log.Warn("BFD sessions", "notes", notes)
	}
	return r.evaluate()
}

// addresses reads the addresses of the namespace's interfaces; on failure
// it logs and returns the last read.
func (r *Runner) addresses() Addresses {
	addrs, err := readAddresses(r.nsFD)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.log.Warn("reading the interfaces' addresses for the BFD sessions' source failed; using the last read", "err", err)
		return r.addrs
	}
	r.addrs = addrs
	return addrs
}

// readAddresses lists the addresses of the interfaces of namespace nsFD
// (0: the caller's) over rtnetlink.
func readAddresses(nsFD int) (Addresses, error) {
	k, err := targetnet.DialNetlinkKernel(nsFD)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	links, err := k.Links()
	if err != nil {
		return nil, err
	}
	list, err := k.Addresses()
	if err != nil {
		return nil, err
	}
	names := map[uint32]string{}
	for _, l := range links {
		names[l.Index] = l.Name
	}
	out := Addresses{}
	for _, a := range list {
		if name, ok := names[a.LinkIndex]; ok {
			out[name] = append(out[name], a.Prefix)
		}
	}
	return out, nil
}

// onEvent logs and counts a session's state change, and applies it to
// the next hops' health.
func (r *Runner) onEvent(ev bfd.Event) {
	r.hmu.Lock()
	r.health.event(ev)
	r.hmu.Unlock()
	defer r.evaluate() // after the session's own log line
	attrs := []any{"peer", ev.Key.Peer, "interface", ev.Key.Interface, "state", ev.New, "was", ev.Old, "diag", ev.Diag}
	switch {
	case ev.New == bfd.StateUp:
		r.counters.up.Add(1)
		r.log.Info("BFD session up", attrs...)
	case ev.Old == bfd.StateUp:
		r.counters.down.Add(1)
		if ev.New == bfd.StateAdminDown {
			r.log.Info("BFD session going down: removed here", attrs...)
			return
		}
		r.log.Warn("BFD session down", append(attrs, "peer_admin_down", ev.PeerAdminDown)...)
	default:
		r.log.Debug("BFD session state", attrs...)
	}
}
