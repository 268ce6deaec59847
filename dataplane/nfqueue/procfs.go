package nfqueue

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ProcStatsPath is the kernel's per-network-namespace queue table. It
// resolves in the namespace of the reading process; a thread that switched
// namespaces reads /proc/thread-self/net/netfilter/nfnetlink_queue.
const ProcStatsPath = "/proc/net/netfilter/nfnetlink_queue"

// KernelQueueStats is one line of ProcStatsPath: the kernel's view of a
// bound queue, including the drops that user space never sees.
type KernelQueueStats struct {
	Queue     uint16 // queue number
	PortID    uint32 // netlink port id of the bound socket
	Waiting   uint32 // packets queued and waiting for a verdict now
	CopyMode  uint8  // 0 none, 1 meta, 2 packet
	CopyRange uint32
	// QueueDropped counts packets dropped because the queue was full.
	QueueDropped uint32
	// UserDropped counts packets the kernel failed to deliver to the
	// socket (receive buffer full).
	UserDropped uint32
	// IDSequence is the last packet id given out.
	IDSequence uint32
}

// ReadProcStats reads and parses the queue table at path (ProcStatsPath
// when empty).
func ReadProcStats(path string) ([]KernelQueueStats, error) {
	if path == "" {
		path = ProcStatsPath
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nfqueue: %w", err)
	}
	defer f.Close()
	return ParseProcStats(f)
}

// ParseProcStats parses the queue table: one line per bound queue of nine
// space-separated numbers (queue, port id, waiting, copy mode, copy range,
// queue dropped, user dropped, id sequence, and a constant 1).
func ParseProcStats(r io.Reader) ([]KernelQueueStats, error) {
	var out []KernelQueueStats
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		s, err := parseProcLine(fields)
		if err != nil {
			return nil, fmt.Errorf("nfqueue: proc stats line %d: %w", line, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("nfqueue: proc stats: %w", err)
	}
	return out, nil
}

func parseProcLine(fields []string) (KernelQueueStats, error) {
	if len(fields) < 8 {
		return KernelQueueStats{}, fmt.Errorf("%d fields, want at least 8", len(fields))
	}
	var v [8]uint64
	bits := [8]int{16, 32, 32, 8, 32, 32, 32, 32}
	for i := range v {
		n, err := strconv.ParseUint(fields[i], 10, bits[i])
		if err != nil {
			return KernelQueueStats{}, fmt.Errorf("field %d: %w", i+1, err)
		}
		v[i] = n
	}
	return KernelQueueStats{
		Queue: uint16(v[0]), PortID: uint32(v[1]), Waiting: uint32(v[2]),
		CopyMode: uint8(v[3]), CopyRange: uint32(v[4]), QueueDropped: uint32(v[5]),
		UserDropped: uint32(v[6]), IDSequence: uint32(v[7]),
	}, nil
}

// FindQueue returns the entry of queue num.
func FindQueue(all []KernelQueueStats, num uint16) (KernelQueueStats, bool) {
	for _, s := range all {
		if s.Queue == num {
			return s, true
		}
	}
	return KernelQueueStats{}, false
}
