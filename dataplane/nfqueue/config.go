package nfqueue

import "fmt"

// Defaults, sized for bursts of small packets on a busy load balancer.
const (
	// DefaultQueueMaxLen is the kernel queue length: packets waiting for a
	// verdict beyond it are dropped by the kernel.
	DefaultQueueMaxLen = 4096
	// DefaultSocketBuffer is the receive and send buffer size asked for.
	DefaultSocketBuffer = 8 << 20
	// DefaultCopyRange covers an IPv6 header with extension headers, an
	// ICMPv6 error with its embedded IPv6 header, and the transport header
	// plus the bytes that byte matches look at.
	DefaultCopyRange = 256
	// DefaultBatchSize is how many datagrams one receive syscall may return.
	DefaultBatchSize = 64
)

// metaRoom is what a datagram needs beyond the copied payload: the netlink
// and nfgenmsg headers and every metadata attribute the kernel may add.
const metaRoom = 512

type config struct {
	queueMaxLen  uint32
	rcvBuf       int
	sndBuf       int
	copyRange    int
	batchSize    int
	gso          bool
	lockOSThread bool
}

func defaultConfig() config {
	return config{
		queueMaxLen: DefaultQueueMaxLen,
		rcvBuf:      DefaultSocketBuffer,
		sndBuf:      DefaultSocketBuffer,
		copyRange:   DefaultCopyRange,
		batchSize:   DefaultBatchSize,
		gso:         true,
	}
}

func (c *config) validate() error {
	switch {
	case c.queueMaxLen == 0:
		return fmt.Errorf("nfqueue: queue max length must be positive")
	case c.copyRange < 1 || c.copyRange > MaxCopyRange:
		return fmt.Errorf("nfqueue: copy range %d not in [1, %d]", c.copyRange, MaxCopyRange)
	case c.batchSize < 1 || c.batchSize > 1024:
		return fmt.Errorf("nfqueue: batch size %d not in [1, 1024]", c.batchSize)
	case c.rcvBuf < 0 || c.sndBuf < 0:
		return fmt.Errorf("nfqueue: negative socket buffer size")
	}
	return nil
}

// Option configures Open and OpenGroup.
type Option func(*config)

// WithQueueMaxLen sets the kernel queue length (NFQA_CFG_QUEUE_MAXLEN).
func WithQueueMaxLen(n uint32) Option { return func(c *config) { c.queueMaxLen = n } }

// WithSocketBuffers sets the socket receive and send buffer sizes in bytes
// (SO_RCVBUFFORCE/SO_SNDBUFFORCE, falling back to SO_RCVBUF/SO_SNDBUF and
// thus to the net.core.*mem_max limits without CAP_NET_ADMIN). Zero keeps
// the system default.
func WithSocketBuffers(rcv, snd int) Option {
	return func(c *config) { c.rcvBuf, c.sndBuf = rcv, snd }
}

// WithCopyRange sets how many bytes of each packet are copied to user
// space, in [1, MaxCopyRange]. Packet.Length still tells the full length.
func WithCopyRange(n int) Option { return func(c *config) { c.copyRange = n } }

// WithBatchSize sets how many datagrams one receive syscall may return and
// therefore how many verdicts share one sendmsg, in [1, 1024].
func WithBatchSize(n int) Option { return func(c *config) { c.batchSize = n } }

// WithGSO sets whether GSO packets are queued whole (NFQA_CFG_F_GSO, the
// default) instead of being segmented by the kernel first.
func WithGSO(on bool) Option { return func(c *config) { c.gso = on } }

// WithLockOSThread makes Run lock its goroutine to an OS thread.
func WithLockOSThread() Option { return func(c *config) { c.lockOSThread = true } }
