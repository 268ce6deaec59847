package main

import (
	"context"
	"time"

	"github.com/sllbrd/sllbrd/internal/liveness"
)

// The delays before a failed prober is replaced: doubling from the first
// to the last while new ones cannot be opened or keep failing at once.
const (
	proberRetryFirst = 100 * time.Millisecond
	proberRetryMax   = 10 * time.Second
)

// run probes until ctx ends. A prober that stops on an error (its poll
// failed, e.g. while RLIMIT_NOFILE is lowered under its descriptors) is
// logged, counted and replaced by a new one that follows the last
// configuration, after a backoff while new ones cannot be opened: the
// SLLBR never stops forwarding for it, and liveness never stays off. The
// dead set stays as it was until the new prober runs; that prober starts
// every address alive (liveness.Prober), so an endpoint dead before is
// found dead again a detection time later. The BFD sessions' clock runs
// beside it (bfdLiveness.run). It returns nil when ctx ends.
func (e *endpointLiveness) run(ctx context.Context) error {
	bfdDone := make(chan struct{})
	go func() {
		defer close(bfdDone)
		e.bfd.run(ctx)
	}()
	defer func() { <-bfdDone }()
	delay := proberRetryFirst
	for {
		e.mu.Lock()
		p := e.prober
		e.mu.Unlock()
		started := time.Now()
		err := p.Run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		e.failures.Add(1)
		if time.Since(started) > proberRetryMax {
			delay = proberRetryFirst // it had been running: not a retry
		}
		e.log.Error("endpoint liveness: the prober stopped; a new one takes over", "err", err, "in", delay.String())
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(delay):
			}
			delay = min(2*delay, proberRetryMax)
			np, err := e.open()
			if err == nil {
				e.replace(np)
				break
			}
			e.log.Error("endpoint liveness: opening a new prober failed; retrying", "err", err, "in", delay.String())
		}
	}
}

// replace makes p the prober, following the last configuration.
func (e *endpointLiveness) replace(p *liveness.Prober) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.past = addStats(e.past, e.prober.Stats())
	e.prober = p
	p.Set(e.targets)
	e.publishLocked()
}

// close releases the sockets of a prober that never ran.
func (e *endpointLiveness) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.prober.Close()
}

// addStats adds the counters of b to a.
func addStats(a, b liveness.Stats) liveness.Stats {
	a.ProbesSent += b.ProbesSent
	a.SendErrors += b.SendErrors
	a.RepliesValid += b.RepliesValid
	a.ReceiveErrors += b.ReceiveErrors
	a.ReceiveDrops += b.ReceiveDrops
	a.Ignored.Malformed += b.Ignored.Malformed
	a.Ignored.ForeignID += b.Ignored.ForeignID
	a.Ignored.WrongSource += b.Ignored.WrongSource
	a.Ignored.UnknownSequence += b.Ignored.UnknownSequence
	a.Ignored.PayloadMismatch += b.Ignored.PayloadMismatch
	return a
}
