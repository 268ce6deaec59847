package lab

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsgSender sends prepared packets round-robin with sendmmsg on a connected
// socket. sendBatch allocates nothing.
type mmsgSender struct {
	fd    int
	batch int
	n     int // distinct packets
	next  int // index of the next packet to send, in [0, n)
	// msgs has n+batch entries; entry j points at packet j%n, so any window
	// msgs[i:i+batch] with i < n is a valid round-robin batch.
	msgs []unix.Mmsghdr
	iovs []unix.Iovec
	pkts [][]byte
	// starts[j] is 1 when packet j%n starts a datagram (is not a later
	// fragment); datagrams counts those sent.
	starts    []uint8
	datagrams uint64
}

// newMmsgSender sends pkts round-robin; firsts marks the packets that start
// a datagram (nil: all do).
func newMmsgSender(fd int, pkts [][]byte, firsts []bool, batch int) *mmsgSender {
	s := &mmsgSender{fd: fd, batch: batch, n: len(pkts), pkts: pkts,
		msgs: make([]unix.Mmsghdr, len(pkts)+batch), iovs: make([]unix.Iovec, len(pkts)), starts: make([]uint8, len(pkts)+batch)}
	for j := range s.starts {
		if firsts == nil || firsts[j%s.n] {
			s.starts[j] = 1
		}
	}
	for i, p := range pkts {
		s.iovs[i].Base = &p[0]
		s.iovs[i].SetLen(len(p))
	}
	for j := range s.msgs {
		s.msgs[j].Hdr.Iov = &s.iovs[j%s.n]
		s.msgs[j].Hdr.SetIovlen(1)
	}
	return s
}

// sendBatch sends up to batch packets with one sendmmsg and returns how many
// the kernel took. A full socket buffer (ENOBUFS, EAGAIN) is 0 packets, not an
// error.
func (s *mmsgSender) sendBatch() (int, error) {
	r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(s.fd),
		uintptr(unsafe.Pointer(&s.msgs[s.next])), uintptr(s.batch), 0, 0, 0)
	if errno != 0 {
		if errors.Is(errno, unix.ENOBUFS) || errors.Is(errno, unix.EAGAIN) || errors.Is(errno, unix.EINTR) {
			return 0, nil
		}
		return 0, errno
	}
	sent := int(r)
	for _, st := range s.starts[s.next : s.next+sent] {
		s.datagrams += uint64(st)
	}
	s.next = (s.next + sent) % s.n
	return sent, nil
}
