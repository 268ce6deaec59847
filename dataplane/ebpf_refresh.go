package dataplane

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// refreshResync is how often Run writes the next hops again without a
// notification: it heals a lost one (a full socket buffer).
const refreshResync = 5 * time.Second

// Run keeps the next hops and attachments in step with the kernel's
// interfaces (their indexes and MTUs), and with XDP the next hops' MACs
// with its neighbour table, until ctx ends: it refreshes them at each
// change the kernel notifies (RTNLGRP_LINK, with XDP RTNLGRP_NEIGH) and
// every refreshResync. Without it a lowered MTU would drop the packets
// redirected above it until the next apply, and a target interface
// created again would have none redirected. Failures are counted
// (RefreshFailures) and retried, never fatal. sllbrd also applies at link
// notifications, which programs the same next hops and attachments; Run
// stays beside it because it does not wait on the apply's spacing, nor on
// an apply that fails for another part's sake.
func (a *BPFAdapter) Run(ctx context.Context) error {
	groups := uint32(1 << (unix.RTNLGRP_LINK - 1))
	if a.opts.XDP {
		groups |= 1 << (unix.RTNLGRP_NEIGH - 1)
	}
	changed := make(chan struct{}, 1)
	go WatchNetlink(ctx, groups, changed, func() { a.refreshFailures.Add(1) })
	tick := time.NewTicker(refreshResync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-tick.C:
		}
		if err := a.Refresh(); err != nil {
			a.refreshFailures.Add(1)
		}
	}
}
