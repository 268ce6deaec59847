package dataplane

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
)

// ExpireInterval is how often Serve drops held fragments that timed out.
const ExpireInterval = 250 * time.Millisecond

// HoldLimit is how many packets Serve holds at most in one kernel queue of
// length queueLen: a quarter of it (1024 of nfqueue.DefaultQueueMaxLen).
// A held fragment occupies its queue until its first fragment comes or the
// fragment lifetime ends, and the kernel drops every packet that finds the
// queue full: without a limit, about queueLen/lifetime fake later fragments
// per second (2,000 for the defaults) would keep the queue full and drop
// all traffic on it. The other three quarters stay for packets waiting for
// their verdict, a backlog far longer than one receive batch. A later
// fragment beyond the limit is dropped (ReasonFragmentHoldLimit).
func HoldLimit(queueLen uint32) int64 { return int64(queueLen / 4) }

// Serve decides every packet of the queues of g until ctx ends: one handler
// (with its own Decision) per queue, verdicts for held fragments sent on the
// queue that holds them, at most HoldLimit held fragments per queue, and a
// ticker dropping held fragments that expired.
func (e *Engine) Serve(ctx context.Context, g *nfqueue.Group) error {
	queues := servedQueues{}
	for _, q := range g.Queues() {
		queues[q.Number()] = &servedQueue{queue: q, limit: HoldLimit(q.MaxLen())}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.expireLoop(ctx, queues.release)
	}()
	err := g.Run(ctx, func(q *nfqueue.Queue) nfqueue.Handler {
		return newQueueHandler(e, queues, q.Number())
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

// releaser gives the verdict of a held packet: *nfqueue.Queue.
type releaser interface {
	Release(id uint32, v nfqueue.Verdict) error
}

// servedQueue is one queue and the packets held in it.
type servedQueue struct {
	queue releaser
	// held counts packets held and not yet released. Only the queue's
	// handler adds to it, after checking it against limit, so it never
	// exceeds limit; releases, from any goroutine, subtract.
	held  atomic.Int64
	limit int64
}

// servedQueues are the queues by number: a token's upper 32 bits.
type servedQueues map[uint16]*servedQueue

// release gives the verdict v to the held packet token names, on the queue
// that holds it.
func (qs servedQueues) release(token uint64, v nfqueue.Verdict) {
	if sq := qs[uint16(token>>32)]; sq != nil {
		sq.held.Add(-1)
		// An error means the queue closed: the kernel drops what it held.
		_ = sq.queue.Release(uint32(token), v)
	}
}

// queueHandler decides the packets of one queue.
type queueHandler struct {
	engine *Engine
	queues servedQueues
	served *servedQueue // queues[this queue]
	token  uint64       // queue number << 32
	d      *Decision
}

func newQueueHandler(e *Engine, qs servedQueues, num uint16) *queueHandler {
	return &queueHandler{engine: e, queues: qs, served: qs[num], token: uint64(num) << 32, d: NewDecision()}
}

// Handle implements nfqueue.Handler; it allocates nothing.
func (h *queueHandler) Handle(p *nfqueue.Packet, v *nfqueue.Verdict) {
	d := h.d
	h.engine.DecideMeta(p.Payload, Meta{
		Length:   p.Length,
		Token:    h.token | uint64(p.ID),
		GSO:      p.SkbInfo&nfqueue.SkbGSO != 0,
		HoldFull: h.served.held.Load() >= h.served.limit,
	}, d)
	switch d.Verdict {
	case Accept:
		v.Action, v.Mark, v.SetMark = nfqueue.Accept, d.Mark, true
	case Hold:
		h.served.held.Add(1)
		v.Action = nfqueue.Hold
	default:
		v.Action = nfqueue.Drop
	}
	for _, tok := range d.Tokens.Release {
		h.queues.release(tok, nfqueue.Verdict{Action: nfqueue.Accept, Mark: d.Mark, SetMark: true})
	}
	for _, tok := range d.Tokens.Drop {
		h.queues.release(tok, nfqueue.Verdict{Action: nfqueue.Drop})
	}
}
