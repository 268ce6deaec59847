package liveness

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// rcvBuf is the receive buffer asked for each raw socket (the kernel
	// caps it at net.core.rmem_max): replies to a wake-up's worth of probes
	// must fit while the prober sends.
	rcvBuf = 1 << 20
	// icmpv6ChecksumOffset is where Linux puts the checksum of every
	// IPPROTO_ICMPV6 raw socket (RFC 3542 section 3.1).
	icmpv6ChecksumOffset = 2
	// skMemInfoDrops is the index of SK_MEMINFO_DROPS in SO_MEMINFO.
	skMemInfoDrops = 8
	skMemInfoVars  = 9
)

// sockaddr is a destination in the form sendto takes.
type sockaddr struct {
	v6  bool
	sa4 unix.RawSockaddrInet4
	sa6 unix.RawSockaddrInet6
}

func newSockaddr(a netip.Addr) sockaddr {
	if a.Is4() {
		return sockaddr{sa4: unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: a.As4()}}
	}
	return sockaddr{v6: true, sa6: unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: a.As16()}}
}

// sockets are the prober's raw sockets and the eventfd that wakes its
// loop. Run uses fd4, fd6 and wake without the lock (it alone closes
// them, at its end); mu orders close against Stats and wake-ups.
type sockets struct {
	fd4, fd6, wake int // -1: none
	mu             sync.Mutex
	closed         bool
	lastDrops      uint64 // what drops read last: the final count once closed
}

// openSockets opens the raw sockets in the calling thread's network
// namespace, each filtered to echo replies.
func openSockets(log *slog.Logger) (_ *sockets, err error) {
	s := &sockets{fd4: -1, fd6: -1, wake: -1}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.fd4, err = openRaw(unix.AF_INET, unix.IPPROTO_ICMP); err != nil {
		if !errors.Is(err, unix.EAFNOSUPPORT) {
			return nil, fmt.Errorf("liveness: open raw ICMPv4 socket: %w%s", err, permHint(err))
		}
		log.Warn("liveness: no IPv4 in this kernel: IPv4 addresses are not probed and are found dead")
	}
	if s.fd6, err = openRaw(unix.AF_INET6, unix.IPPROTO_ICMPV6); err != nil {
		if !errors.Is(err, unix.EAFNOSUPPORT) {
			return nil, fmt.Errorf("liveness: open raw ICMPv6 socket: %w%s", err, permHint(err))
		}
		log.Warn("liveness: no IPv6 in this kernel: IPv6 addresses are not probed and are found dead")
	}
	if s.fd4 < 0 && s.fd6 < 0 {
		return nil, errors.New("liveness: neither IPv4 nor IPv6 is available")
	}
	if err = s.filter(); err != nil {
		return nil, err
	}
	if s.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("liveness: eventfd: %w", err)
	}
	return s, nil
}

func permHint(err error) string {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return " (raw sockets need CAP_NET_RAW in the network namespace's user namespace)"
	}
	return ""
}

func openRaw(family, proto int) (int, error) {
	fd, err := unix.Socket(family, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return -1, err
	}
	// Best effort: a smaller buffer only loses replies under a burst, which
	// SO_MEMINFO counts (Stats.ReceiveDrops).
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf)
	return fd, nil
}

// filter makes the kernel queue echo replies only, and checks that the
// kernel computes and verifies ICMPv6 checksums on the IPv6 socket.
func (s *sockets) filter() error {
	if s.fd4 >= 0 {
		// ICMP_FILTER: a set bit drops that type (raw(7)).
		if err := unix.SetsockoptInt(s.fd4, unix.SOL_RAW, unix.ICMP_FILTER, int(^uint32(1<<TypeEchoReply4))); err != nil {
			return fmt.Errorf("liveness: ICMP_FILTER: %w", err)
		}
	}
	if s.fd6 >= 0 {
		// ICMP6_FILTER: a set bit drops that type (RFC 3542 section 3.2
		// inverted, as Linux stores it).
		var f unix.ICMPv6Filter
		for i := range f.Data {
			f.Data[i] = ^uint32(0)
		}
		f.Data[TypeEchoReply6>>5] &^= 1 << (TypeEchoReply6 & 31)
		if err := unix.SetsockoptICMPv6Filter(s.fd6, unix.SOL_ICMPV6, unix.ICMPV6_FILTER, &f); err != nil {
			return fmt.Errorf("liveness: ICMP6_FILTER: %w", err)
		}
		off, err := unix.GetsockoptInt(s.fd6, unix.IPPROTO_IPV6, unix.IPV6_CHECKSUM)
		if err != nil {
			return fmt.Errorf("liveness: IPV6_CHECKSUM: %w", err)
		}
		if off != icmpv6ChecksumOffset {
			return fmt.Errorf("liveness: the kernel reports ICMPv6 checksum offset %d, not %d: it would not checksum probes", off, icmpv6ChecksumOffset)
		}
	}
	return nil
}

// send sends one message to sa without blocking; it returns the errno.
// (unix.Sendto would do, but this takes the prebuilt address as is.)
func (s *sockets) send(b []byte, sa *sockaddr) syscall.Errno {
	fd, ptr, n := s.fd4, unsafe.Pointer(&sa.sa4), uintptr(unix.SizeofSockaddrInet4)
	if sa.v6 {
		fd, ptr, n = s.fd6, unsafe.Pointer(&sa.sa6), uintptr(unix.SizeofSockaddrInet6)
	}
	if fd < 0 {
		return unix.EAFNOSUPPORT
	}
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		0, uintptr(ptr), n)
	return e
}

// recv reads one datagram from fd without blocking or allocating (unlike
// unix.Recvfrom): its length (the real one, MSG_TRUNC) and the source
// address of an IPv6 one.
func recv(fd int, b []byte, from *unix.RawSockaddrInet6) (int, syscall.Errno) {
	fromLen := uint32(unix.SizeofSockaddrInet6)
	n, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		unix.MSG_TRUNC, uintptr(unsafe.Pointer(from)), uintptr(unsafe.Pointer(&fromLen)))
	return int(n), e
}

// wakeUp makes the loop's poll return.
func (s *sockets) wakeUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		_, _ = unix.Write(s.wake, one[:])
	}
}

// drainWake resets the eventfd.
func (s *sockets) drainWake() {
	var b [8]byte
	_, _ = unix.Read(s.wake, b[:])
}

// drops is the number of datagrams the kernel dropped on the sockets for
// lack of buffer space.
func (s *sockets) drops() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readDrops()
}

func (s *sockets) readDrops() uint64 {
	if s.closed {
		return s.lastDrops
	}
	var total uint64
	for _, fd := range []int{s.fd4, s.fd6} {
		if fd < 0 {
			continue
		}
		var info [skMemInfoVars]uint32
		l := uint32(unsafe.Sizeof(info))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&l)), 0)
		if e == 0 && l > skMemInfoDrops*4 {
			total += uint64(info[skMemInfoDrops])
		}
	}
	s.lastDrops = max(s.lastDrops, total)
	return s.lastDrops
}

// close closes every descriptor once.
func (s *sockets) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.readDrops()
	s.closed = true
	var errs []error
	for _, fd := range []int{s.fd4, s.fd6, s.wake} {
		if fd >= 0 {
			if err := unix.Close(fd); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("liveness: close sockets: %w", err)
	}
	return nil
}
