package route

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// watchedGroups are the rtnetlink notifications that announce every change
// to rules and default routes: their own, and the link, address and
// next-hop object changes after which the kernel removes routes without a
// route notification of its own (IPv4 flushes the routes of a link that
// goes down or loses its address silently).
var watchedGroups = []uint32{
	unix.RTNLGRP_LINK,
	unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV6_IFADDR,
	unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE,
	unix.RTNLGRP_IPV4_RULE, unix.RTNLGRP_IPV6_RULE,
	unix.RTNLGRP_NEXTHOP,
}

// maxDrain bounds the notifications one ChangedElsewhere reads: under a
// flood it reports a change and leaves the rest for the next call.
const maxDrain = 4096

// watcher reads the notifications of watchedGroups without blocking and
// tells those caused by the writer socket (port ID self) from the rest.
type watcher struct {
	conn *netlink.Conn
	raw  syscall.RawConn
	self uint32
	buf  []byte
}

// dialWatcher subscribes to watchedGroups in the network namespace
// netnsFD (0: the caller's); self is the port ID of the socket whose
// changes are not reported.
func dialWatcher(netnsFD int, self uint32) (*watcher, error) {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: netnsFD})
	if err != nil {
		return nil, fmt.Errorf("dial rtnetlink notifications: %w", err)
	}
	w := &watcher{conn: c, self: self, buf: make([]byte, 64<<10)}
	if w.raw, err = c.SyscallConn(); err != nil {
		c.Close()
		return nil, fmt.Errorf("rtnetlink notifications: %w", err)
	}
	for _, g := range watchedGroups {
		if err := c.JoinGroup(g); err != nil {
			c.Close()
			return nil, fmt.Errorf("join rtnetlink group %d: %w", g, err)
		}
	}
	return w, nil
}

func (w *watcher) Close() error { return w.conn.Close() }

// changedElsewhere reads every pending notification and reports whether
// one was sent for another socket than self's request or by the kernel
// itself, whether some were lost (the socket's buffer overflowed), or
// whether reading failed: in all these cases the kernel may hold rules or
// routes its caller has not seen.
func (w *watcher) changedElsewhere() bool {
	changed := false
	for range maxDrain {
		n, err := w.receive()
		switch {
		case errors.Is(err, unix.EAGAIN):
			return changed
		case errors.Is(err, unix.ENOBUFS):
			changed = true // lost notifications; the rest are still queued
		case err != nil:
			return true
		default:
			changed = changed || w.foreign(w.buf[:n])
		}
	}
	return true
}

// receive reads one datagram without waiting.
func (w *watcher) receive() (int, error) {
	var n int
	var rerr error
	err := w.raw.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), w.buf, unix.MSG_DONTWAIT|unix.MSG_TRUNC)
		return true
	})
	if err != nil {
		return 0, err
	}
	if rerr == nil && n > len(w.buf) {
		return 0, fmt.Errorf("notification of %d bytes truncated", n)
	}
	return n, rerr
}

// foreign reports whether a datagram holds a message that self did not
// cause (or cannot be parsed).
func (w *watcher) foreign(b []byte) bool {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return true
	}
	for _, m := range msgs {
		if m.Header.Pid != w.self {
			return true
		}
	}
	return false
}

// portID returns the port ID rt's requests carry, which the kernel copies
// into the notifications of the changes they make. It sends one link dump
// request and reads its answer.
func portID(rt *rtnetlink.Conn) (uint32, error) {
	req, err := rt.Send(&rtnetlink.LinkMessage{}, unix.RTM_GETLINK, netlink.Request|netlink.Dump)
	if err != nil {
		return 0, fmt.Errorf("learn the port ID: %w", err)
	}
	if _, _, err := rt.Receive(); err != nil {
		return 0, fmt.Errorf("learn the port ID: %w", err)
	}
	return req.Header.PID, nil
}
