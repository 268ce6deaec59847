package metrics

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
)

// QueueStats is the user-space counters of one nfqueue queue.
type QueueStats struct {
	Queue uint16
	Stats nfqueue.Stats
}

// GroupQueues returns a source reading the counters of every queue of g.
func GroupQueues(g *nfqueue.Group) func() []QueueStats {
	return func() []QueueStats {
		qs := g.Queues()
		out := make([]QueueStats, len(qs))
		for i, q := range qs {
			out[i] = QueueStats{Queue: q.Number(), Stats: q.Stats()}
		}
		return out
	}
}

var (
	nfqPacketsDesc = queueDesc("sllbrd_nfqueue_packets_total",
		"Packets received from the kernel queue.")
	nfqBatchesDesc = queueDesc("sllbrd_nfqueue_batches_total",
		"Receive system calls that returned at least one message.")
	nfqVerdictsDesc = prometheus.NewDesc("sllbrd_nfqueue_verdicts_total",
		"Verdicts sent to the kernel by action (released held packets included).",
		[]string{"queue", "action"}, nil)
	nfqHeldDesc = queueDesc("sllbrd_nfqueue_held_packets_total",
		"Packets kept queued without a verdict (fragments waiting for their first fragment).")
	nfqReleasedDesc = queueDesc("sllbrd_nfqueue_released_packets_total",
		"Held packets that later got a verdict.")
	nfqOwnDropsDesc = queueDesc("sllbrd_nfqueue_unparsable_drops_total",
		"Packets dropped by the reader because their queue message could not be parsed.")
	nfqParseErrorsDesc = queueDesc("sllbrd_nfqueue_parse_errors_total",
		"Malformed queue messages.")
	nfqForeignDesc = queueDesc("sllbrd_nfqueue_foreign_messages_total",
		"Messages ignored because the kernel did not send them.")
	nfqRecvErrorsDesc = queueDesc("sllbrd_nfqueue_receive_errors_total",
		"Failed receive system calls (ENOBUFS included).")
	nfqNoBufsDesc = queueDesc("sllbrd_nfqueue_enobufs_total",
		"Receive system calls that failed with ENOBUFS: the socket buffer overflowed and packets were lost.")
	nfqSendErrorsDesc = queueDesc("sllbrd_nfqueue_send_errors_total",
		"Failed verdict send system calls.")
	nfqVerdictErrorsDesc = queueDesc("sllbrd_nfqueue_verdict_errors_total",
		"Verdicts the kernel rejected.")
	nfqGSODesc = queueDesc("sllbrd_nfqueue_gso_packets_total",
		"Packets the kernel queued as GSO/GRO aggregates (NFQA_SKB_GSO): one message and one verdict for many segments.")
	nfqLargestDesc = queueDesc("sllbrd_nfqueue_largest_packet_bytes",
		"Length of the longest packet received since start; above 65535 when GRO/BIG TCP aggregates reach the queue.")
	nfqKernelDroppedDesc = queueDesc("sllbrd_nfqueue_kernel_dropped_total",
		"Packets the kernel dropped because the queue was full (queue_dropped).")
	nfqKernelUserDroppedDesc = queueDesc("sllbrd_nfqueue_kernel_user_dropped_total",
		"Packets the kernel failed to deliver to the reader's socket (user_dropped).")
	nfqWaitingDesc = queueDesc("sllbrd_nfqueue_waiting",
		"Packets queued in the kernel waiting for a verdict.")
)

func queueDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"queue"}, nil)
}

// NFQueueCollector exports the counters of the nfqueue readers and the
// kernel's per-queue counters.
type NFQueueCollector struct {
	queues   func() []QueueStats
	procPath string
}

// NFQueueOption configures an NFQueueCollector.
type NFQueueOption func(*NFQueueCollector)

// WithProcStatsPath reads the kernel's queue table from path instead of
// nfqueue.ProcStatsPath. The table belongs to the network namespace of the
// reading process; "" disables the kernel metrics.
func WithProcStatsPath(path string) NFQueueOption {
	return func(c *NFQueueCollector) { c.procPath = path }
}

// NewNFQueueCollector returns a collector reading queues (for example
// GroupQueues(group)) and the kernel's queue table at every scrape. The
// kernel metrics cover every queue bound in the network namespace.
func NewNFQueueCollector(queues func() []QueueStats, opts ...NFQueueOption) *NFQueueCollector {
	c := &NFQueueCollector{queues: queues, procPath: nfqueue.ProcStatsPath}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *NFQueueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		nfqPacketsDesc, nfqBatchesDesc, nfqVerdictsDesc, nfqHeldDesc, nfqReleasedDesc,
		nfqOwnDropsDesc, nfqParseErrorsDesc, nfqForeignDesc, nfqRecvErrorsDesc, nfqNoBufsDesc,
		nfqSendErrorsDesc, nfqVerdictErrorsDesc, nfqGSODesc, nfqLargestDesc, nfqKernelDroppedDesc,
		nfqKernelUserDroppedDesc, nfqWaitingDesc,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *NFQueueCollector) Collect(ch chan<- prometheus.Metric) {
	if c.queues != nil {
		for _, q := range c.queues() {
			collectQueue(ch, strconv.Itoa(int(q.Queue)), &q.Stats)
		}
	}
	c.collectKernel(ch)
}

func collectQueue(ch chan<- prometheus.Metric, queue string, s *nfqueue.Stats) {
	ch <- counter(nfqVerdictsDesc, s.Accepted, queue, "accept")
	ch <- counter(nfqVerdictsDesc, s.Dropped, queue, "drop")
	for _, m := range []struct {
		d *prometheus.Desc
		n uint64
	}{
		{nfqPacketsDesc, s.Packets}, {nfqBatchesDesc, s.Batches},
		{nfqHeldDesc, s.Held}, {nfqReleasedDesc, s.Released},
		{nfqOwnDropsDesc, s.OwnDrops}, {nfqParseErrorsDesc, s.ParseErrors},
		{nfqForeignDesc, s.Foreign}, {nfqRecvErrorsDesc, s.RecvErrors},
		{nfqNoBufsDesc, s.NoBufs}, {nfqSendErrorsDesc, s.SendErrors},
		{nfqVerdictErrorsDesc, s.VerdictErrors}, {nfqGSODesc, s.GSO},
	} {
		ch <- counter(m.d, m.n, queue)
	}
	ch <- gauge(nfqLargestDesc, float64(s.Largest), queue)
}

// collectKernel exports the kernel's queue table. A missing table (the
// nfnetlink_queue module is not loaded yet) means no queue is bound: nothing
// to export. Other read errors fail the scrape of these metrics only.
func (c *NFQueueCollector) collectKernel(ch chan<- prometheus.Metric) {
	if c.procPath == "" {
		return
	}
	all, err := nfqueue.ReadProcStats(c.procPath)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		ch <- prometheus.NewInvalidMetric(nfqKernelDroppedDesc, fmt.Errorf("metrics: kernel queue stats: %w", err))
		return
	}
	for _, k := range all {
		queue := strconv.Itoa(int(k.Queue))
		ch <- counter(nfqKernelDroppedDesc, uint64(k.QueueDropped), queue)
		ch <- counter(nfqKernelUserDroppedDesc, uint64(k.UserDropped), queue)
		ch <- gauge(nfqWaitingDesc, float64(k.Waiting), queue)
	}
}
