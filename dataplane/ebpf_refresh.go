package dataplane

import (
	"context"
	"time"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
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
// (RefreshFailures) and retried, never fatal.
func (a *BPFAdapter) Run(ctx context.Context) error {
	groups := uint32(1 << (unix.RTNLGRP_LINK - 1))
	if a.opts.XDP {
		groups |= 1 << (unix.RTNLGRP_NEIGH - 1)
	}
	changed := make(chan struct{}, 1)
	go a.watch(ctx, groups, changed)
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

// watch signals changed (without blocking) at every notification of the
// rtnetlink groups until ctx ends, dialling again after an error.
func (a *BPFAdapter) watch(ctx context.Context, groups uint32, changed chan<- struct{}) {
	for ctx.Err() == nil {
		c, err := rtnetlink.Dial(&netlink.Config{Groups: groups})
		if err != nil {
			a.refreshFailures.Add(1)
			sleepCtx(ctx, time.Second)
			continue
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		for {
			if _, _, err := c.Receive(); err != nil {
				break
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		stop()
		c.Close()
		if ctx.Err() == nil {
			a.refreshFailures.Add(1)
			sleepCtx(ctx, time.Second)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
