package admin

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// Backoff of a listener's failed accepts, as net/http's: 5 ms doubling to
// 1 s.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// retryingListener is a net.Listener whose Accept waits out temporary
// failures (out of descriptors or memory, a connection aborted before it
// was accepted) and tries again, reporting them to its Diagnostics, instead
// of returning them: a server that returned on such an error would stop
// serving for good. Other errors are returned.
type retryingListener struct {
	net.Listener
	name      string
	diag      *Diagnostics
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *retryingListener) Accept() (net.Conn, error) {
	var delay time.Duration
	failures := 0
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			if failures > 0 {
				l.diag.acceptRecovered(l.name, failures)
			}
			return c, nil
		}
		if !temporaryAccept(err) {
			return nil, err
		}
		failures++
		l.diag.acceptFailed(l.name, err)
		delay = min(max(2*delay, acceptBackoffMin), acceptBackoffMax)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-l.closed:
			t.Stop()
			return nil, fmt.Errorf("accept: %w", net.ErrClosed)
		}
	}
}

// Close closes the listener and ends an Accept waiting to retry.
func (l *retryingListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// temporaryAccept reports whether an accept failed for a reason that may
// pass: the process or the system is out of descriptors or memory, or the
// kernel passed on an error of the pending connection (accept(2): Linux
// reports those from accept, and they are to be treated like EAGAIN).
func temporaryAccept(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.EAGAIN, syscall.EINTR, syscall.ECONNABORTED, syscall.EPERM,
		syscall.ENETDOWN, syscall.EPROTO, syscall.ENOPROTOOPT, syscall.EHOSTDOWN,
		syscall.ENONET, syscall.EHOSTUNREACH, syscall.EOPNOTSUPP, syscall.ENETUNREACH:
		return true
	}
	return false
}
