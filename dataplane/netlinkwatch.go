package dataplane

import (
	"context"
	"time"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
)

// WatchNetlink signals changed, without blocking, at every notification of
// the rtnetlink multicast groups (a bit mask of 1 << (RTNLGRP_* - 1)) in
// the calling goroutine's network namespace, until ctx ends. A failed dial
// or receive (a full socket buffer loses notifications) calls failed,
// signals changed (what was lost is unknown) and dials again a second
// later.
func WatchNetlink(ctx context.Context, groups uint32, changed chan<- struct{}, failed func()) {
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		c, err := rtnetlink.Dial(&netlink.Config{Groups: groups})
		if err != nil {
			failed()
			sleepCtx(ctx, time.Second)
			continue
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		for {
			if _, _, err := c.Receive(); err != nil {
				break
			}
			signal()
		}
		stop()
		c.Close()
		if ctx.Err() == nil {
			failed()
			signal()
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
