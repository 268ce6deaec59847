package nfqueue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// Group is the queues [first, first+n), each run by its own goroutine. It
// pairs with a queueing rule that spreads over n queues (NFQUEUE
// --queue-balance first:first+n-1, or queues_total n).
type Group struct {
	queues []*Queue
}

// OpenGroup opens queues [first, first+n) with the same options; n <= 0
// means runtime.NumCPU(). On error nothing stays open.
func OpenGroup(first uint16, n int, opts ...Option) (*Group, error) {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	if int(first)+n > 1<<16 {
		return nil, fmt.Errorf("nfqueue: queues %d+%d exceed 65535", first, n)
	}
	g := &Group{}
	for i := range n {
		q, err := Open(first+uint16(i), opts...)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.queues = append(g.queues, q)
	}
	return g, nil
}

// Queues returns the group's queues in order.
func (g *Group) Queues() []*Queue { return g.queues }

// Run runs every queue with the Handler newHandler makes for it (one per
// queue, so handlers need not share state) until ctx is done or one queue
// fails; then it stops the others and returns the first error (ctx.Err()
// when ctx ended it).
func (g *Group) Run(ctx context.Context, newHandler func(*Queue) Handler) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, q := range g.queues {
		h := newHandler(q)
		wg.Go(func() {
			if err := q.Run(ctx, h); err != nil && !errors.Is(err, context.Canceled) {
				cancel(err)
			}
		})
	}
	<-ctx.Done()
	wg.Wait()
	return context.Cause(ctx)
}

// Stats is the sum of the queues' counters.
func (g *Group) Stats() Stats {
	var s Stats
	for _, q := range g.queues {
		s = s.Add(q.Stats())
	}
	return s
}

// Close closes every queue and returns the first error.
func (g *Group) Close() error {
	var first error
	for _, q := range g.queues {
		if err := q.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
