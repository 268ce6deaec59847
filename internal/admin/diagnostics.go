package admin

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Names under which Diagnostics reports sllbrd's diagnostics servers.
const (
	ServerAdminSocket = "admin-socket"
	ServerMetrics     = "metrics" // /metrics, /healthz, /readyz
	ServerPprof       = "pprof"
)

// Backoff before a server that failed is opened again: 1 s doubling to
// 30 s, from 1 s again once it served for 30 s.
const (
	restartBackoffMin = time.Second
	restartBackoffMax = 30 * time.Second
)

// acceptLogEvery bounds the warnings of one run of failed accepts.
const acceptLogEvery = time.Minute

// Diagnostics keeps a daemon's diagnostics servers (the admin socket, the
// metrics endpoint, pprof) serving, apart from what they diagnose: a failed
// accept is retried (Listener), a server that stops serving is opened again
// (Start, Kept.Run), and both are logged and counted (Health). Nothing of
// theirs ends the daemon or changes its readiness. Safe for concurrent
// use.
type Diagnostics struct {
	log     *slog.Logger
	mu      sync.Mutex
	servers []*serverState // in the order first reported
}

// ServerHealth is what Diagnostics knows of one server.
type ServerHealth struct {
	Name    string
	Serving bool
	// Failures counts the times the server stopped serving, or could not
	// be opened again, while the daemon ran.
	Failures uint64
	// AcceptErrors counts the accepts that failed and were retried.
	AcceptErrors uint64
	LastError    string
}

type serverState struct {
	ServerHealth
	streak      int       // failed accepts in a row
	lastWarning time.Time // of the current run of failed accepts
}

// NewDiagnostics returns a Diagnostics that logs to log.
func NewDiagnostics(log *slog.Logger) *Diagnostics { return &Diagnostics{log: log} }

// Health returns every server's state, in the order they were started.
func (d *Diagnostics) Health() []ServerHealth {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]ServerHealth, len(d.servers))
	for i, s := range d.servers {
		out[i] = s.ServerHealth
	}
	return out
}

// state returns name's state, made on first use; d.mu must be held.
func (d *Diagnostics) state(name string) *serverState {
	for _, s := range d.servers {
		if s.Name == name {
			return s
		}
	}
	s := &serverState{ServerHealth: ServerHealth{Name: name}}
	d.servers = append(d.servers, s)
	return s
}

// Listener returns ln with an Accept that retries temporary failures
// (EMFILE, ENFILE, ENOMEM, ...) with backoff (5 ms doubling to 1 s) and
// reports them under server name; it returns other errors. Closing it ends
// a wait.
func (d *Diagnostics) Listener(name string, ln net.Listener) net.Listener {
	return &retryingListener{Listener: ln, name: name, diag: d, closed: make(chan struct{})}
}

func (d *Diagnostics) acceptFailed(name string, err error) {
	d.mu.Lock()
	s := d.state(name)
	s.AcceptErrors++
	s.streak++
	s.LastError = err.Error()
	warn := s.streak == 1 || time.Since(s.lastWarning) >= acceptLogEvery
	if warn {
		s.lastWarning = time.Now()
	}
	streak := s.streak
	d.mu.Unlock()
	if warn {
		d.log.Warn("diagnostics server: accept failed; retrying with backoff (forwarding is not affected)",
			"server", name, "err", err, "failed_in_a_row", streak)
	}
}

func (d *Diagnostics) acceptRecovered(name string, failures int) {
	d.mu.Lock()
	d.state(name).streak = 0
	d.mu.Unlock()
	d.log.Info("diagnostics server: accepting again", "server", name, "failed_accepts", failures)
}

// setServing records whether name serves, and err when it stopped or
// could not be opened (counted as a failure).
func (d *Diagnostics) setServing(name string, serving bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.state(name)
	s.Serving = serving
	if err != nil {
		s.Failures++
		s.LastError = err.Error()
	}
}

// An Opener opens a server (listens) and returns the function that serves
// it until ctx ends. That function returns nil once ctx has ended, or the
// error that stopped it; either way it has released what the Opener
// opened, also when given a context that has already ended.
type Opener func() (serve func(ctx context.Context) error, err error)

// Kept is a server Diagnostics keeps serving.
type Kept struct {
	d     *Diagnostics
	name  string
	open  Opener
	serve func(context.Context) error
}

// Start opens server name with open now; its error is returned as it is,
// for the caller to fail its start (a bad address, a port in use). Run
// then serves it.
func (d *Diagnostics) Start(name string, open Opener) (*Kept, error) {
	serve, err := open()
	if err != nil {
		return nil, err
	}
	d.setServing(name, true, nil)
	return &Kept{d: d, name: name, open: open, serve: serve}, nil
}

// Run serves until ctx ends, and only then returns. When serving fails,
// the failure is logged and counted, and the server is opened again after
// a backoff (1 s doubling to 30 s, from 1 s again once it served 30 s).
func (k *Kept) Run(ctx context.Context) {
	delay := time.Duration(0)
	for {
		started := time.Now()
		err := k.serve(ctx)
		if ctx.Err() != nil {
			k.d.setServing(k.name, false, nil)
			return
		}
		if time.Since(started) >= restartBackoffMax {
			delay = 0
		}
		for {
			delay = min(max(2*delay, restartBackoffMin), restartBackoffMax)
			k.d.setServing(k.name, false, err)
			k.d.log.Error("diagnostics server failed; opening it again after a backoff (forwarding is not affected)",
				"server", k.name, "err", err, "retry_in", delay.String())
			if !sleep(ctx, delay) {
				k.d.setServing(k.name, false, nil)
				return
			}
			if k.serve, err = k.open(); err == nil {
				break
			}
		}
		k.d.setServing(k.name, true, nil)
		k.d.log.Info("diagnostics server serving again", "server", k.name)
	}
}

// Close releases what Start opened, for a Kept that will not Run.
func (k *Kept) Close() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = k.serve(ctx)
	k.d.setServing(k.name, false, nil)
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
