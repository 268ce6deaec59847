package liveness

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// recvBufLen holds any IPv4 packet or ICMPv6 message, so that nothing
	// is truncated (a longer one is malformed).
	recvBufLen = 1 << 16
	// maxReadsPerWake bounds the replies read before due probes are sent,
	// so that a flood of replies cannot stop probing.
	maxReadsPerWake = 256
	// maxLoggedChanges: a larger batch (this side's own link broken) is
	// logged as one line, each change at debug level.
	maxLoggedChanges = 16
)

var (
	// ErrStarted: Run was called after Run or Close.
	ErrStarted = errors.New("liveness: the prober has already run or been closed")
	// ErrRunning: Close was called while Run runs (end Run's context instead).
	ErrRunning = errors.New("liveness: the prober is running")
)

// loop is Run's state: its buffers are allocated once, so that steady-state
// probing allocates nothing.
type loop struct {
	p    *Prober
	out  outbox
	buf  []byte
	from unix.RawSockaddrInet6
	echo Echo
	fds  [3]unix.PollFd // wake-up, ICMPv4, ICMPv6
	ts   unix.Timespec
	// pollFailing: the last ppoll failed (logged once per run of failures).
	pollFailing bool
}

// Run probes until ctx ends, then closes the sockets and returns nil (or
// the error that stopped it early). It runs once. Changes are handed to the
// OnChange function by another goroutine, which Run waits for.
func (p *Prober) Run(ctx context.Context) error {
	if p.socks == nil {
		return errors.New("liveness: a Prober must come from New")
	}
	if !p.started.CompareAndSwap(false, true) {
		return ErrStarted
	}
	defer close(p.done)
	defer p.socks.close()
	stop := context.AfterFunc(ctx, p.socks.wakeUp)
	defer stop()

	var dispatcher sync.WaitGroup
	dispatchDone := make(chan struct{})
	dispatcher.Go(func() { p.dispatch(dispatchDone) })
	defer func() {
		close(dispatchDone)
		dispatcher.Wait()
	}()

	l := p.newLoop()
	for ctx.Err() == nil {
		next := l.sendDue()
		p.notifyPending()
		if err := l.poll(next); err != nil {
			return err
		}
		l.readAll()
		p.notifyPending()
	}
	return nil
}

// Close releases the sockets of a Prober that will not run (Run closes
// them when it returns). It is a no-op after Run has returned.
func (p *Prober) Close() error {
	if p.socks == nil {
		return nil
	}
	if p.started.CompareAndSwap(false, true) {
		close(p.done)
		return p.socks.close()
	}
	select {
	case <-p.done:
		return nil
	default:
		return ErrRunning
	}
}

func (p *Prober) newLoop() *loop {
	l := &loop{p: p, buf: make([]byte, recvBufLen)}
	l.fds[0] = unix.PollFd{Fd: int32(p.socks.wake), Events: unix.POLLIN}
	l.fds[1] = unix.PollFd{Fd: int32(p.socks.fd4), Events: unix.POLLIN}
	l.fds[2] = unix.PollFd{Fd: int32(p.socks.fd6), Events: unix.POLLIN}
	return l
}

// sendDue sends every probe due now and returns when the next is due.
func (l *loop) sendDue() time.Time {
	p := l.p
	for {
		p.mu.Lock()
		next := p.collect(p.clock(), &l.out)
		p.mu.Unlock()
		for i := range l.out.probes[:l.out.n] {
			pr := &l.out.probes[i]
			pr.err = p.socks.send(pr.pkt[:pr.n], &pr.ep.sa)
		}
		p.sent(&l.out)
		if l.out.n < len(l.out.probes) {
			return next
		}
	}
}

// pollRetry is the longest wait between two reads of the sockets while
// ppoll fails.
const pollRetry = 10 * time.Millisecond

// poll waits until next (zero: indefinitely), a wake-up or a reply.
func (l *loop) poll(next time.Time) error {
	var ts *unix.Timespec
	if !next.IsZero() {
		l.ts = unix.NsecToTimespec(max(int64(next.Sub(l.p.clock())), 0))
		ts = &l.ts
	}
	for i := range l.fds {
		l.fds[i].Revents = 0
	}
	if _, err := unix.Ppoll(l.fds[:], ts, nil); err != nil && !errors.Is(err, unix.EINTR) {
		// ppoll fails while the process lacks descriptors (EINVAL when
		// RLIMIT_NOFILE is below its three) or memory. The sockets still
		// read without it: wait a little and read them anyway. Returning
		// would stop the probes, and a new prober would start every
		// address alive again.
		l.p.stats.recvErrors.Add(1)
		if !l.pollFailing {
			l.p.opts.logger.Warn("liveness: poll failed; reading the sockets without it until it works again", "err", err)
		}
		l.pollFailing = true
		wait := pollRetry
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(l.p.clock()), time.Millisecond))
		}
		time.Sleep(wait)
		for i := range l.fds[1:] {
			l.fds[1+i].Revents = unix.POLLIN
		}
		return nil
	}
	if l.pollFailing {
		l.p.opts.logger.Info("liveness: poll works again")
		l.pollFailing = false
	}
	if l.fds[0].Revents != 0 {
		l.p.socks.drainWake()
	}
	return nil
}

// readAll reads what the sockets hold, up to maxReadsPerWake each.
func (l *loop) readAll() {
	for i, v6 := range [2]bool{false, true} {
		pf := &l.fds[1+i]
		if pf.Fd < 0 || pf.Revents == 0 {
			continue
		}
		for range maxReadsPerWake {
			if !l.read(int(pf.Fd), v6) {
				break
			}
		}
	}
}

// read reads and handles one datagram; false: nothing (more) to read.
func (l *loop) read(fd int, v6 bool) bool {
	p := l.p
	n, e := recv(fd, l.buf, &l.from)
	switch {
	case e == unix.EAGAIN || e == unix.EINTR:
		return false
	case e != 0:
		p.stats.recvErrors.Add(1)
		return false
	}
	if n > len(l.buf) {
		n = -1 // longer than any IP packet: malformed
	}
	p.receive(p.clock(), &l.echo, l.buf, n, v6, netip.AddrFrom16(l.from.Addr))
	return true
}

// wake makes a running loop look at its schedule again.
func (p *Prober) wake() {
	if p.socks != nil {
		p.socks.wakeUp()
	}
}

// notifyPending wakes the dispatcher if changes are pending.
func (p *Prober) notifyPending() {
	p.mu.Lock()
	n := len(p.pending)
	p.mu.Unlock()
	if n > 0 {
		select {
		case p.notify <- struct{}{}:
		default:
		}
	}
}

// dispatch delivers pending changes until done is closed, then the rest.
func (p *Prober) dispatch(done <-chan struct{}) {
	for {
		select {
		case <-p.notify:
			p.deliver()
		case <-done:
			p.deliver()
			return
		}
	}
}

func (p *Prober) deliver() {
	p.mu.Lock()
	cs := p.pending
	p.pending = nil
	p.mu.Unlock()
	if len(cs) == 0 {
		return
	}
	level := slog.LevelInfo
	if len(cs) > maxLoggedChanges {
		dead := 0
		for _, c := range cs {
			if !c.Alive {
				dead++
			}
		}
		p.opts.logger.Info("liveness: many addresses changed at once", "dead", dead, "alive", len(cs)-dead)
		level = slog.LevelDebug
	}
	for _, c := range cs {
		p.opts.logger.Log(context.Background(), level, "liveness: address "+aliveWord(c.Alive), "addr", c.Addr, "after", c.Detection)
	}
	if p.opts.onChange != nil {
		p.opts.onChange(cs)
	}
}

func aliveWord(alive bool) string {
	if alive {
		return "alive"
	}
	return "dead"
}
