package dataplane

import (
	"context"
	"errors"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
)

// ExpireInterval is how often Serve drops held fragments that timed out.
const ExpireInterval = 250 * time.Millisecond

// Serve decides every packet of the queues of g until ctx ends: one handler
// (with its own Decision) per queue, verdicts for held fragments sent on the
// queue that holds them, and a ticker dropping held fragments that expired.
func (e *Engine) Serve(ctx context.Context, g *nfqueue.Group) error {
	byNumber := map[uint16]*nfqueue.Queue{}
	for _, q := range g.Queues() {
		byNumber[q.Number()] = q
	}
	release := func(token uint64, v nfqueue.Verdict) {
		if q := byNumber[uint16(token>>32)]; q != nil {
			// An error means the queue closed: the kernel drops what it held.
			_ = q.Release(uint32(token), v)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.expireLoop(ctx, release)
	}()
	err := g.Run(ctx, func(q *nfqueue.Queue) nfqueue.Handler {
		return &queueHandler{engine: e, queue: uint64(q.Number()) << 32, d: NewDecision(), release: release}
	})
	cancel()
	<-done
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func (e *Engine) expireLoop(ctx context.Context, release func(uint64, nfqueue.Verdict)) {
	t := time.NewTicker(ExpireInterval)
	defer t.Stop()
	var drop []uint64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			drop = e.Expire(now, drop[:0])
			for _, tok := range drop {
				release(tok, nfqueue.Verdict{Action: nfqueue.Drop})
			}
		}
	}
}

// queueHandler decides the packets of one queue.
type queueHandler struct {
	engine  *Engine
	queue   uint64 // queue number << 32
	d       *Decision
	release func(uint64, nfqueue.Verdict)
}

// Handle implements nfqueue.Handler; it allocates nothing.
func (h *queueHandler) Handle(p *nfqueue.Packet, v *nfqueue.Verdict) {
	d := h.d
	h.engine.Decide(p.Payload, p.Length, h.queue|uint64(p.ID), d)
	switch d.Verdict {
	case Accept:
		v.Action, v.Mark, v.SetMark = nfqueue.Accept, d.Mark, true
	case Hold:
		v.Action = nfqueue.Hold
	default:
		v.Action = nfqueue.Drop
	}
	for _, tok := range d.Tokens.Release {
		h.release(tok, nfqueue.Verdict{Action: nfqueue.Accept, Mark: d.Mark, SetMark: true})
	}
	for _, tok := range d.Tokens.Drop {
		h.release(tok, nfqueue.Verdict{Action: nfqueue.Drop})
	}
}
