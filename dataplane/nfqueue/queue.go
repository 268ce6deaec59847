package nfqueue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrRunning is returned by Run when the queue is already being run.
var ErrRunning = errors.New("nfqueue: queue is already running")

// Queue is one bound kernel queue. Run is its only reader; Release, Stats
// and Close may be called from any goroutine.
type Queue struct {
	num   uint16
	cfg   config
	file  *os.File
	conn  syscall.RawConn
	rx    *receiver
	batch *batch
	stats counters

	running atomic.Bool
	closed  atomic.Bool
	recvFn  func(fd uintptr) bool // q.recvOnce, bound once so Run allocates nothing
	sendFn  func(fd uintptr) bool // q.sendOnce
	rxCount int
	rxErrno unix.Errno
	txErrno unix.Errno

	// mu guards the hand-over of released verdicts: while the reader is
	// inside a batch they join its sendmsg, otherwise Release sends them.
	mu       sync.Mutex
	inBatch  bool
	released []byte
}

// Open binds kernel queue num in the network namespace of the calling
// thread. It fails (wrapping EPERM) if another socket has bound the queue.
func Open(num uint16, opts ...Option) (*Queue, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	f, conn, err := openSocket(&cfg)
	if err != nil {
		return nil, err
	}
	q := &Queue{
		num: num, cfg: cfg, file: f, conn: conn,
		rx:       newReceiver(cfg.batchSize, align4(cfg.copyRange)+metaRoom),
		batch:    newBatch(num, cfg.batchSize),
		released: make([]byte, 0, cfg.batchSize*maxVerdictBytes),
	}
	q.recvFn, q.sendFn = q.recvOnce, q.sendOnce
	if err := q.configure(); err != nil {
		f.Close()
		return nil, err
	}
	return q, nil
}

// Number is the kernel queue number.
func (q *Queue) Number() uint16 { return q.num }

// MaxLen is the kernel queue length the queue was configured with
// (WithQueueMaxLen): packets waiting for a verdict, held ones included,
// beyond it are dropped by the kernel.
func (q *Queue) MaxLen() uint32 { return q.cfg.queueMaxLen }

// Stats returns a snapshot of the queue's counters.
func (q *Queue) Stats() Stats { return q.stats.snapshot() }

// Close unbinds the queue (the kernel drops the packets still waiting for a
// verdict, held ones included) and stops Run.
func (q *Queue) Close() error {
	q.closed.Store(true)
	if err := q.file.Close(); err != nil {
		return fmt.Errorf("nfqueue: close queue %d: %w", q.num, err)
	}
	return nil
}

// Run receives and handles packets until ctx is done (it returns
// ctx.Err()), the queue is closed (an error wrapping os.ErrClosed) or the
// socket fails. h is called for every packet, from this goroutine only.
// Run may be called again after it returned, but not concurrently.
func (q *Queue) Run(ctx context.Context, h Handler) error {
	if !q.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer q.running.Store(false)
	if q.cfg.lockOSThread {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	q.batch.handler = h
	if err := q.file.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("nfqueue: queue %d: %w", q.num, err)
	}
	stop := context.AfterFunc(ctx, func() { q.file.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		if err := q.conn.Read(q.recvFn); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if q.closed.Load() {
				return fmt.Errorf("nfqueue: queue %d: %w", q.num, os.ErrClosed)
			}
			return fmt.Errorf("nfqueue: queue %d: receive: %w", q.num, err)
		}
		if q.rxErrno != 0 {
			if err := q.receiveError(); err != nil {
				return err
			}
			continue
		}
		q.handleBatch()
	}
}

// recvOnce is the poller callback: false means "would block, wait".
func (q *Queue) recvOnce(fd uintptr) bool {
	q.rxCount, q.rxErrno = q.rx.recv(fd)
	return q.rxErrno != unix.EAGAIN
}

func (q *Queue) sendOnce(fd uintptr) bool {
	q.txErrno = send(fd, q.batch.out)
	return q.txErrno != unix.EAGAIN
}

// receiveError counts a failed receive. The loop goes on after ENOBUFS
// (the kernel dropped messages; only without NETLINK_NO_ENOBUFS) and EINTR;
// any other error ends Run.
func (q *Queue) receiveError() error {
	d := Stats{RecvErrors: 1}
	if q.rxErrno == unix.ENOBUFS {
		d.NoBufs = 1
	}
	q.stats.add(&d)
	if q.rxErrno == unix.ENOBUFS || q.rxErrno == unix.EINTR {
		return nil
	}
	return fmt.Errorf("nfqueue: queue %d: recvmmsg: %w", q.num, q.rxErrno)
}

// handleBatch handles the received datagrams and sends all their verdicts,
// and any released meanwhile, in one sendmsg.
func (q *Queue) handleBatch() {
	b := q.batch
	b.reset()
	b.delta.Batches = 1
	q.mu.Lock()
	q.inBatch = true
	q.mu.Unlock()
	for i := range q.rxCount {
		d, fromKernel := q.rx.datagram(i)
		if !fromKernel {
			b.delta.Foreign++
			continue
		}
		b.datagram(d)
	}
	q.mu.Lock()
	b.out = append(b.out, q.released...)
	q.released = q.released[:0]
	q.inBatch = false
	q.mu.Unlock()
	if len(b.out) > 0 {
		q.txErrno = 0
		if err := q.conn.Write(q.sendFn); err != nil || q.txErrno != 0 {
			b.delta.SendErrors++
		}
	}
	q.stats.add(&b.delta)
}
