package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab/responder"
)

// Lab is one built laboratory. Its methods are safe for concurrent use.
type Lab struct {
	opts    Options
	log     Logger
	runID   string
	tmp     string // temporary directory: logs, configs, built binaries
	mu      sync.Mutex
	created []string // namespaces, in creation order
	procs   []*Process
	sinks   []*XDPSink
	resp    map[string]*Process // target -> its responder
	spawn   *spawner
	closed  bool
}

// New builds a lab. On error everything it created is already removed. The
// caller must Close the lab (tests: t.Cleanup(func() { l.Close() })).
func New(ctx context.Context, opts Options) (l *Lab, err error) {
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("lab: needs root (network namespaces)")
	}
	l = &Lab{opts: opts, log: opts.Logger, runID: opts.RunID, resp: map[string]*Process{}, spawn: newSpawner()}
	if l.runID == "" {
		l.runID = randomRunID()
	}
	if l.tmp, err = os.MkdirTemp("", NSPrefix+l.runID+"-"); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			l.Close()
			panic(p)
		}
		if err != nil {
			if cerr := l.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			l = nil
		}
	}()
	start := time.Now()
	if err := l.build(ctx); err != nil {
		return l, fmt.Errorf("lab %s: build: %w", l.runID, err)
	}
	if !opts.NoResponders {
		if err := l.startResponders(ctx); err != nil {
			return l, fmt.Errorf("lab %s: %w", l.runID, err)
		}
	}
	l.log.Logf("lab %s: %d LB(s), %d target(s) up in %v", l.runID, opts.LBs, opts.Targets, time.Since(start).Round(time.Millisecond))
	return l, nil
}

func randomRunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b) // never fails (crypto/rand contract)
	return hex.EncodeToString(b)
}

// RunID is the random part of every namespace name of this lab.
func (l *Lab) RunID() string { return l.runID }

// Options returns the options with defaults filled in.
func (l *Lab) Options() Options { return l.opts }

// NS returns the full namespace name of node ("gw", "lb1", "t3", ...).
func (l *Lab) NS(node string) string { return NSPrefix + l.runID + "-" + node }

// LBs returns the LB node names.
func (l *Lab) LBs() []string { return names(l.opts.LBs, LBName) }

// Targets returns the target node names.
func (l *Lab) Targets() []string { return names(l.opts.Targets, TargetName) }

func names(n int, name func(int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = name(i + 1)
	}
	return out
}

// VIPs returns the lab's VIPs.
func (l *Lab) VIPs() []netip.Addr { return l.opts.VIPs }

// Exec runs a command inside node's namespace (bounded by a 20 s timeout) and
// returns its stdout; the error includes stderr.
func (l *Lab) Exec(ctx context.Context, node string, args ...string) (string, error) {
	return runIn(ctx, l.NS(node), args...)
}

// ExecInput is Exec with stdin as the command's standard input.
func (l *Lab) ExecInput(ctx context.Context, node, stdin string, args ...string) (string, error) {
	return runInput(ctx, stdin, "ip", append([]string{"netns", "exec", l.NS(node)}, args...)...)
}

// Do runs fn on a thread inside node's namespace (see InNetns).
func (l *Lab) Do(node string, fn func() error) error { return InNetns(l.NS(node), fn) }

// TempDir is the lab's scratch directory (logs, configs), removed by Close.
func (l *Lab) TempDir() string { return l.tmp }

// spawnTracked starts p's command unless the lab is closed and records p;
// holding the lock across the fork means Close never misses a process nor
// stops the spawner under it.
func (l *Lab) spawnTracked(p *Process) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("lab is closed")
	}
	if err := l.spawn.start(p.cmd); err != nil {
		return err
	}
	p.PID = p.cmd.Process.Pid
	l.procs = append(l.procs, p)
	return nil
}

// Close closes every XDP sink the lab installed, stops every process it
// started (by PID, newest first), deletes its namespaces (by name) and its
// temporary directory. It is idempotent.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	procs, created, sinks := l.procs, l.created, l.sinks
	l.mu.Unlock()
	var errs []error
	for i := len(sinks) - 1; i >= 0; i-- {
		errs = append(errs, sinks[i].Close())
	}
	for i := len(procs) - 1; i >= 0; i-- {
		errs = append(errs, procs[i].Stop())
	}
	l.spawn.stop()
	ctx := context.Background()
	for i := len(created) - 1; i >= 0; i-- {
		errs = append(errs, deleteNetns(ctx, created[i]))
	}
	if left, err := ListNetns(NSPrefix + l.runID + "-"); err != nil || len(left) > 0 {
		errs = append(errs, fmt.Errorf("lab %s: namespaces left after close: %v %v", l.runID, left, err))
	}
	errs = append(errs, os.RemoveAll(l.tmp))
	l.log.Logf("lab %s: closed", l.runID)
	return errors.Join(errs...)
}

// Responder returns the responder process of target, or nil.
func (l *Lab) Responder(target string) *Process {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.resp[target]
}

// StartResponder (re)starts target's responder; an old one is stopped first.
func (l *Lab) StartResponder(ctx context.Context, target string) (*Process, error) {
	if old := l.Responder(target); old != nil {
		if err := old.Stop(); err != nil {
			return nil, err
		}
	}
	bin, err := l.responderBinary(ctx)
	if err != nil {
		return nil, err
	}
	vips := make([]string, len(l.opts.VIPs))
	for i, v := range l.opts.VIPs {
		vips[i] = v.String()
	}
	p, err := l.start(target, "responder-"+target, "ready", 10*time.Second, nil, bin,
		"-name", target, "-addr", strings.Join(vips, ","),
		"-udp", responder.FormatPorts(l.opts.UDPPorts), "-tcp", responder.FormatPorts(l.opts.TCPPorts),
		"-echo", responder.FormatPorts(l.opts.EchoPorts))
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.resp[target] = p
	l.mu.Unlock()
	return p, nil
}

func (l *Lab) startResponders(ctx context.Context) error {
	for _, t := range l.Targets() {
		if _, err := l.StartResponder(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
