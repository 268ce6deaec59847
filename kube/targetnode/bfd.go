package targetnode

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/sllbrd/sllbrd/internal/targetbfd"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// podBFD runs the BFD sessions of one pod (its agent's targetpod.Liveness):
// a targetbfd.Runner on a thread in the pod's network namespace while the
// configuration applied asks for a session and the last apply found that
// namespace. It stops the Runner (AdminDown to the SLLBRs) when liveness
// is gone, when the pod has no namespace any more (its thread and sockets
// would keep the dead namespace alive), when the namespace is another
// (the sandbox re-created: a new Runner starts there) and when the pod's
// agent stops (the pod deleted, finished, or marked for the sidecar).
type podBFD struct {
	d      *Daemon
	ns     *podNamespace
	log    *slog.Logger
	kick   chan struct{}
	downCh chan struct{} // DownChanged: the Runner's, relayed, or a Runner stopped

	mu       sync.Mutex
	want     []targetbfd.Gateway
	runner   *targetbfd.Runner // running; nil: none
	runnerNS nsID              // the namespace it runs in
	stop     func()            // ends the runner and waits for it (run's goroutine only)
}

var _ targetpod.Liveness = (*podBFD)(nil)

func newPodBFD(d *Daemon, ns *podNamespace, log *slog.Logger) *podBFD {
	return &podBFD{d: d, ns: ns, log: log, kick: make(chan struct{}, 1), downCh: make(chan struct{}, 1)}
}

// Set implements targetpod.Liveness: it never blocks.
func (p *podBFD) Set(gws []targetbfd.Gateway) {
	p.mu.Lock()
	p.want = gws
	p.mu.Unlock()
	p.wake()
}

// Down implements targetpod.Liveness: the running Runner's (none without
// one: no session says anything).
func (p *podBFD) Down() []netip.Addr {
	if r := p.current(); r != nil {
		return r.Down()
	}
	return nil
}

// DownChanged implements targetpod.Liveness.
func (p *podBFD) DownChanged() <-chan struct{} { return p.downCh }

func (p *podBFD) downChanged() {
	select {
	case p.downCh <- struct{}{}:
	default:
	}
}

// namespaceChanged says that the last apply found no namespace; nil-safe
// (the clean-up runs no BFD).
func (p *podBFD) namespaceChanged() {
	if p != nil {
		p.wake()
	}
}

func (p *podBFD) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run follows Set and the namespace until ctx (the pod's agent's) ends,
// then stops the Runner.
func (p *podBFD) run(ctx context.Context) {
	for {
		var down <-chan struct{} // nil without a Runner: never ready
		if r := p.current(); r != nil {
			down = r.DownChanged()
		}
		select {
		case <-ctx.Done():
			p.stopRunner()
			return
		case <-p.kick:
			p.reconcile(ctx)
		case <-down:
			p.downChanged()
		}
	}
}

// reconcile starts, restarts, stops or updates the Runner.
func (p *podBFD) reconcile(ctx context.Context) {
	p.mu.Lock()
	want, r, rns := p.want, p.runner, p.runnerNS
	p.mu.Unlock()
	cur, ok := p.ns.currentNS()
	switch {
	case !ok || !hasNextHop(want):
		p.stopRunner()
		return
	case r != nil && rns == cur:
		r.Set(want)
		return
	}
	p.stopRunner()
	f, id, err := p.ns.open()
	if errors.Is(err, targetpod.ErrNoNamespace) {
		return // the next apply tells (or stops it)
	}
	if err != nil {
		p.d.bfd.CountServerFailure()
		p.log.Warn("the pod's BFD sessions cannot start: its network namespace cannot be opened; trying again at the next apply", "err", err)
		return
	}
	r = targetbfd.NewRunner(f, targetbfd.WithLogger(p.log), targetbfd.WithCounters(p.d.bfd))
	r.Set(want)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(rctx) // returns nil when rctx ends
	}()
	p.mu.Lock()
	p.runner, p.runnerNS = r, id
	p.mu.Unlock()
	p.stop = func() { cancel(); <-done }
	p.log.Info("running the pod's BFD sessions in its network namespace", "namespace", f.Name())
}

// stopRunner stops the Runner, if any: its sessions go AdminDown
// (targetbfd.ShutdownTimeout), its thread ends and its namespace file is
// closed.
func (p *podBFD) stopRunner() {
	if p.stop == nil {
		return
	}
	p.stop()
	p.stop = nil
	p.mu.Lock()
	p.runner, p.runnerNS = nil, nsID{}
	p.mu.Unlock()
	p.downChanged() // no next hop is found down any more
	p.log.Info("the pod's BFD sessions stopped")
}

// current returns the running Runner (nil: none); nil-safe.
func (p *podBFD) current() *targetbfd.Runner {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runner
}

func hasNextHop(gws []targetbfd.Gateway) bool {
	for _, g := range gws {
		if len(g.NextHops)+len(g.Down) > 0 {
			return true
		}
	}
	return false
}

// BFDStats returns the BFD sessions of the node's pods (the target side of
// the BFD liveness probe), summed, and the daemon's BFD counts since New.
func (d *Daemon) BFDStats() targetbfd.Stats {
	var runners []*targetbfd.Runner
	d.mu.Lock()
	for _, w := range d.pods {
		if r := w.bfd.current(); r != nil {
			runners = append(runners, r)
		}
	}
	d.mu.Unlock()
	return d.bfd.Stats(runners...)
}
