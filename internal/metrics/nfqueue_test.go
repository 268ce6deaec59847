package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
)

func writeProcFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nfnetlink_queue")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func fakeQueues() []QueueStats {
	return []QueueStats{
		{Queue: 0, Stats: nfqueue.Stats{Packets: 10, Batches: 3, Accepted: 7, Dropped: 2, Held: 1,
			Released: 1, OwnDrops: 1, ParseErrors: 2, Foreign: 4, RecvErrors: 5, NoBufs: 3,
			SendErrors: 6, VerdictErrors: 8, GSO: 2, Largest: 131072}},
		{Queue: 1, Stats: nfqueue.Stats{Packets: 20, Batches: 9, Accepted: 20, Largest: 1500}},
	}
}

const queuesExposition = `
# HELP sllbrd_nfqueue_batches_total Receive system calls that returned at least one message.
# TYPE sllbrd_nfqueue_batches_total counter
sllbrd_nfqueue_batches_total{queue="0"} 3
sllbrd_nfqueue_batches_total{queue="1"} 9
# HELP sllbrd_nfqueue_enobufs_total Receive system calls that failed with ENOBUFS: the socket buffer overflowed and packets were lost.
# TYPE sllbrd_nfqueue_enobufs_total counter
sllbrd_nfqueue_enobufs_total{queue="0"} 3
sllbrd_nfqueue_enobufs_total{queue="1"} 0
# HELP sllbrd_nfqueue_foreign_messages_total Messages ignored because the kernel did not send them.
# TYPE sllbrd_nfqueue_foreign_messages_total counter
sllbrd_nfqueue_foreign_messages_total{queue="0"} 4
sllbrd_nfqueue_foreign_messages_total{queue="1"} 0
# HELP sllbrd_nfqueue_gso_packets_total Packets the kernel queued as GSO/GRO aggregates (NFQA_SKB_GSO): one message and one verdict for many segments.
# TYPE sllbrd_nfqueue_gso_packets_total counter
sllbrd_nfqueue_gso_packets_total{queue="0"} 2
sllbrd_nfqueue_gso_packets_total{queue="1"} 0
# HELP sllbrd_nfqueue_held_packets_total Packets kept queued without a verdict (fragments waiting for their first fragment).
# TYPE sllbrd_nfqueue_held_packets_total counter
sllbrd_nfqueue_held_packets_total{queue="0"} 1
sllbrd_nfqueue_held_packets_total{queue="1"} 0
# HELP sllbrd_nfqueue_largest_packet_bytes Length of the longest packet received since start; above 65535 when GRO/BIG TCP aggregates reach the queue.
# TYPE sllbrd_nfqueue_largest_packet_bytes gauge
sllbrd_nfqueue_largest_packet_bytes{queue="0"} 131072
sllbrd_nfqueue_largest_packet_bytes{queue="1"} 1500
# HELP sllbrd_nfqueue_packets_total Packets received from the kernel queue.
# TYPE sllbrd_nfqueue_packets_total counter
sllbrd_nfqueue_packets_total{queue="0"} 10
sllbrd_nfqueue_packets_total{queue="1"} 20
# HELP sllbrd_nfqueue_parse_errors_total Malformed queue messages.
# TYPE sllbrd_nfqueue_parse_errors_total counter
sllbrd_nfqueue_parse_errors_total{queue="0"} 2
sllbrd_nfqueue_parse_errors_total{queue="1"} 0
# HELP sllbrd_nfqueue_receive_errors_total Failed receive system calls (ENOBUFS included).
# TYPE sllbrd_nfqueue_receive_errors_total counter
sllbrd_nfqueue_receive_errors_total{queue="0"} 5
sllbrd_nfqueue_receive_errors_total{queue="1"} 0
# HELP sllbrd_nfqueue_released_packets_total Held packets that later got a verdict.
# TYPE sllbrd_nfqueue_released_packets_total counter
sllbrd_nfqueue_released_packets_total{queue="0"} 1
sllbrd_nfqueue_released_packets_total{queue="1"} 0
# HELP sllbrd_nfqueue_send_errors_total Failed verdict send system calls.
# TYPE sllbrd_nfqueue_send_errors_total counter
sllbrd_nfqueue_send_errors_total{queue="0"} 6
sllbrd_nfqueue_send_errors_total{queue="1"} 0
# HELP sllbrd_nfqueue_unparsable_drops_total Packets dropped by the reader because their queue message could not be parsed.
# TYPE sllbrd_nfqueue_unparsable_drops_total counter
sllbrd_nfqueue_unparsable_drops_total{queue="0"} 1
sllbrd_nfqueue_unparsable_drops_total{queue="1"} 0
# HELP sllbrd_nfqueue_verdict_errors_total Verdicts the kernel rejected.
# TYPE sllbrd_nfqueue_verdict_errors_total counter
sllbrd_nfqueue_verdict_errors_total{queue="0"} 8
sllbrd_nfqueue_verdict_errors_total{queue="1"} 0
# HELP sllbrd_nfqueue_verdicts_total Verdicts sent to the kernel by action (released held packets included).
# TYPE sllbrd_nfqueue_verdicts_total counter
sllbrd_nfqueue_verdicts_total{action="accept",queue="0"} 7
sllbrd_nfqueue_verdicts_total{action="drop",queue="0"} 2
sllbrd_nfqueue_verdicts_total{action="accept",queue="1"} 20
sllbrd_nfqueue_verdicts_total{action="drop",queue="1"} 0
`

const kernelExposition = `
# HELP sllbrd_nfqueue_kernel_dropped_total Packets the kernel dropped because the queue was full (queue_dropped).
# TYPE sllbrd_nfqueue_kernel_dropped_total counter
sllbrd_nfqueue_kernel_dropped_total{queue="0"} 17
sllbrd_nfqueue_kernel_dropped_total{queue="1"} 0
# HELP sllbrd_nfqueue_kernel_user_dropped_total Packets the kernel failed to deliver to the reader's socket (user_dropped).
# TYPE sllbrd_nfqueue_kernel_user_dropped_total counter
sllbrd_nfqueue_kernel_user_dropped_total{queue="0"} 4
sllbrd_nfqueue_kernel_user_dropped_total{queue="1"} 0
# HELP sllbrd_nfqueue_waiting Packets queued in the kernel waiting for a verdict.
# TYPE sllbrd_nfqueue_waiting gauge
sllbrd_nfqueue_waiting{queue="0"} 3
sllbrd_nfqueue_waiting{queue="1"} 0
`

// procTable is two bound queues in the kernel's format: queue, port id,
// waiting, copy mode, copy range, queue dropped, user dropped, id sequence, 1.
const procTable = "    0   1234     3 2 65531    17     4      999  1\n    1   1235     0 2 65531     0     0       20  1\n"

func TestNFQueueCollector(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queues func() []QueueStats
		path   string
		want   string
	}{
		{"user space counters", fakeQueues, "", queuesExposition},
		{"kernel table", nil, writeProcFile(t, procTable), kernelExposition},
		{"no kernel table yet", nil, filepath.Join(t.TempDir(), "absent"), ""},
		{"both", fakeQueues, writeProcFile(t, procTable), queuesExposition + kernelExposition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewNFQueueCollector(tc.queues, WithProcStatsPath(tc.path))
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNFQueueCollectorReportsUnreadableKernelTable(t *testing.T) {
	c := NewNFQueueCollector(fakeQueues, WithProcStatsPath(writeProcFile(t, "0 not a number\n")))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err == nil || !strings.Contains(err.Error(), "kernel queue stats") {
		t.Fatalf("gather error %v, want the kernel table's parse error", err)
	}
	if len(mfs) == 0 {
		t.Fatal("the user space counters were not gathered alongside the error")
	}
}

func TestNFQueueCollectorDefaultsToProcPath(t *testing.T) {
	if c := NewNFQueueCollector(nil); c.procPath != nfqueue.ProcStatsPath {
		t.Fatalf("default path %q, want %q", c.procPath, nfqueue.ProcStatsPath)
	}
}
