package nfqueue

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openSocket opens a non-blocking NETLINK_NETFILTER socket, sets its
// options and hands it to the runtime poller as an *os.File (so that reads
// can be woken by deadlines and Close).
func openSocket(cfg *config) (*os.File, syscall.RawConn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK,
		unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, nil, fmt.Errorf("nfqueue: netlink socket: %w", err)
	}
	if err := setupSocket(fd, cfg); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), "nfqueue")
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("nfqueue: raw conn: %w", err)
	}
	return f, conn, nil
}

func setupSocket(fd int, cfg *config) error {
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("nfqueue: bind netlink socket: %w", err)
	}
	// Without this an overflowing socket reports ENOBUFS on receive; the
	// kernel counts the lost packets in /proc either way.
	if err := unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1); err != nil {
		return fmt.Errorf("nfqueue: NETLINK_NO_ENOBUFS: %w", err)
	}
	if err := setBuffer(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, cfg.rcvBuf); err != nil {
		return err
	}
	return setBuffer(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, cfg.sndBuf)
}

// setBuffer sets a socket buffer size, beyond the sysctl limit if allowed.
func setBuffer(fd, force, plain, size int) error {
	if size == 0 {
		return nil
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size) == nil {
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, size); err != nil {
		return fmt.Errorf("nfqueue: socket buffer %d: %w", size, err)
	}
	return nil
}

// mmsghdr is struct mmsghdr of recvmmsg(2); Go's alignment of Msghdr pads
// it like C on every architecture.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// receiver holds the preallocated buffers of recvmmsg: one datagram per
// buffer (the kernel sends each queued packet as its own datagram), and the
// sender address of each so that datagrams not from the kernel are ignored.
type receiver struct {
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	addrs []unix.RawSockaddrNetlink
	bufs  [][]byte
}

func newReceiver(count, bufSize int) *receiver {
	r := &receiver{
		hdrs:  make([]mmsghdr, count),
		iovs:  make([]unix.Iovec, count),
		addrs: make([]unix.RawSockaddrNetlink, count),
		bufs:  make([][]byte, count),
	}
	mem := make([]byte, count*bufSize)
	for i := range r.hdrs {
		r.bufs[i] = mem[i*bufSize : (i+1)*bufSize : (i+1)*bufSize]
		r.iovs[i].Base = &r.bufs[i][0]
		r.iovs[i].SetLen(bufSize)
		r.hdrs[i].hdr.Iov = &r.iovs[i]
		r.hdrs[i].hdr.SetIovlen(1)
		r.hdrs[i].hdr.Name = (*byte)(unsafe.Pointer(&r.addrs[i]))
	}
	return r
}

// recv receives up to len(r.hdrs) datagrams without blocking.
func (r *receiver) recv(fd uintptr) (int, unix.Errno) {
	for i := range r.hdrs {
		r.hdrs[i].hdr.Namelen = unix.SizeofSockaddrNetlink
		r.hdrs[i].hdr.Flags = 0
	}
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd,
		uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(len(r.hdrs)), unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}

// datagram returns the i-th received datagram and whether it came from the
// kernel (port id 0). A datagram cut short (MSG_TRUNC) is returned as far as
// it was received; the parser handles the short message.
func (r *receiver) datagram(i int) (d []byte, fromKernel bool) {
	h := &r.hdrs[i]
	n := min(int(h.n), len(r.bufs[i]))
	return r.bufs[i][:n], r.addrs[i].Pid == 0
}

// send writes b, which may hold many netlink messages, in one syscall.
func send(fd uintptr, b []byte) unix.Errno {
	_, _, errno := unix.Syscall(unix.SYS_WRITE, fd,
		uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return errno
}
