package nft

import (
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// NetlinkEntryConn commits EntryTx transactions on a netlink socket of
// its own, opened for each transaction in the network namespace given to
// NewNetlinkEntryConn.
type NetlinkEntryConn struct {
	netns int
	buf   []byte // reused: a 16,381-entry change is about a megabyte
}

var _ EntryConn = (*NetlinkEntryConn)(nil)

// NewNetlinkEntryConn returns an EntryConn for the network namespace of
// the file descriptor netnsFD (0: the caller's).
func NewNetlinkEntryConn(netnsFD int) *NetlinkEntryConn {
	return &NetlinkEntryConn{netns: netnsFD}
}

// CommitEntries implements EntryConn. The kernel handles a batch inside
// the send call: when the send returns, every error the batch caused is
// already queued on the socket, and an empty socket means it committed
// (the messages ask for no acknowledgement, as nft(8) does).
func (c *NetlinkEntryConn) CommitEntries(genID uint32, tx *EntryTx) error {
	buf, err := appendEntryBatch(c.buf[:0], 1, genID, tx)
	if err != nil {
		return err
	}
	c.buf = buf
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: c.netns})
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer conn.Close()
	// Errors name the failing message without echoing it.
	if err := conn.SetOption(netlink.CapAcknowledge, true); err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	if have, err := conn.WriteBuffer(); err == nil && have < len(buf) {
		if err := conn.SetWriteBuffer(len(buf)); err != nil {
			return fmt.Errorf("netlink: send buffer for %d bytes: %w", len(buf), err)
		}
	}
	if err := send(conn, buf); err != nil {
		return fmt.Errorf("send %d entry changes: %w", tx.elements(), err)
	}
	return batchErrors(conn)
}

// send sends buf, a batch of messages, in one datagram to the kernel.
func send(conn *netlink.Conn, buf []byte) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN && serr != unix.EINTR
	}); err != nil {
		return err
	}
	return serr
}

// batchErrors returns the first error the kernel queued on conn for the
// batch just sent, or nil when it queued nothing.
func batchErrors(conn *netlink.Conn) error {
	for {
		ready, err := readable(conn)
		if err != nil || !ready {
			return err
		}
		msgs, err := conn.Receive()
		if err != nil {
			return fmt.Errorf("the kernel refused the transaction: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Type == netlink.Error {
				return errors.New("the kernel acknowledged a message of the transaction, which asked for none")
			}
		}
	}
}

// readable polls conn without waiting.
func readable(conn *netlink.Conn) (bool, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("netlink: %w", err)
	}
	var n int
	var perr error
	if err := rc.Control(func(fd uintptr) {
		for {
			n, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			if perr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return false, fmt.Errorf("netlink: %w", err)
	}
	if perr != nil {
		return false, fmt.Errorf("netlink poll: %w", perr)
	}
	return n > 0, nil
}
