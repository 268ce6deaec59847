package dataplane

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// NeighbourKey is a neighbour: an address on an interface.
type NeighbourKey struct {
	Ifindex int
	Addr    netip.Addr // unmapped
}

// Neighbours are the link-layer addresses of the usable neighbour entries.
type Neighbours map[NeighbourKey]net.HardwareAddr

// usableNeighbour are the neighbour states whose link-layer address the
// kernel itself sends to (rtnetlink(7), NUD_*): not INCOMPLETE, FAILED or
// NONE. A STALE entry is one no traffic of the stack confirmed lately,
// which is all the XDP program's traffic: the kernel still sends to it.
const usableNeighbour = unix.NUD_REACHABLE | unix.NUD_STALE | unix.NUD_DELAY | unix.NUD_PROBE | unix.NUD_PERMANENT | unix.NUD_NOARP

// NetlinkNeighbours lists the usable neighbour entries of the calling
// thread's network namespace (IPv4 and IPv6).
func NetlinkNeighbours() (Neighbours, error) {
	c, err := rtnetlink.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("dial rtnetlink: %w", err)
	}
	defer c.Close()
	msgs, err := c.Neigh.List()
	if err != nil {
		return nil, fmt.Errorf("list neighbours: %w", err)
	}
	return usableNeighbours(msgs), nil
}

func usableNeighbours(msgs []rtnetlink.NeighMessage) Neighbours {
	out := Neighbours{}
	for _, m := range msgs {
		if m.State&usableNeighbour == 0 || m.Attributes == nil || len(m.Attributes.LLAddress) != 6 {
			continue
		}
		addr, ok := netip.AddrFromSlice(m.Attributes.Address)
		if !ok {
			continue
		}
		out[NeighbourKey{Ifindex: int(m.Index), Addr: addr.Unmap()}] = m.Attributes.LLAddress
	}
	return out
}

// neighbourResync is how often Run writes the next hops again without a
// notification: it heals a lost one (a full socket buffer).
const neighbourResync = 5 * time.Second

// Run keeps the next hops' MACs in step with the kernel's neighbour table
// until ctx ends: it writes them again at each change the kernel notifies
// (RTNLGRP_NEIGH) and every neighbourResync. Without XDP it only waits.
// Failures are counted (RefreshFailures) and retried, never fatal: a next
// hop without its MAC is forwarded by the tc program.
func (a *BPFAdapter) Run(ctx context.Context) error {
	if !a.opts.XDP {
		<-ctx.Done()
		return nil
	}
	changed := make(chan struct{}, 1)
	go a.watchNeighbours(ctx, changed)
	tick := time.NewTicker(neighbourResync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-tick.C:
		}
		if err := a.RefreshNeighbours(); err != nil {
			a.refreshFailures.Add(1)
		}
	}
}

// watchNeighbours signals changed (without blocking) at every neighbour
// notification until ctx ends, dialling again after an error.
func (a *BPFAdapter) watchNeighbours(ctx context.Context, changed chan<- struct{}) {
	for ctx.Err() == nil {
		c, err := rtnetlink.Dial(&netlink.Config{Groups: 1 << (unix.RTNLGRP_NEIGH - 1)})
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
