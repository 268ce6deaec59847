package nfqueue

import (
	"context"
	"runtime"
	"testing"
	"time"

	gonfqueue "github.com/florianl/go-nfqueue/v2"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// floodResult is what one bounded flood measured.
type floodResult struct {
	sent, verdicts uint64
	pps            float64
	allocsPerPkt   float64
	kernel         KernelQueueStats
}

// flood sends up to 200k small UDP packets as fast as one client socket
// can (at most 20 s), waits until the verdict count stops moving, and
// returns what it measured. verdicts reads the reader's verdict count.
func flood(t *testing.T, l *lab, verdicts func() uint64) floodResult {
	t.Helper()
	s := newSender(t, l, labClientAddr)
	const total = 200_000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	sent := uint64(s.send(t, total, []uint16{7000, 7001, 7002}, start.Add(20*time.Second)))
	sendTime := time.Since(start)
	last, lastChange := verdicts(), time.Now()
	for time.Since(lastChange) < 200*time.Millisecond && last < sent {
		time.Sleep(10 * time.Millisecond)
		if v := verdicts(); v != last {
			last, lastChange = v, time.Now()
		}
	}
	runtime.ReadMemStats(&after)
	elapsed := lastChange.Sub(start)
	r := floodResult{sent: sent, verdicts: last, pps: float64(last) / elapsed.Seconds(),
		allocsPerPkt: float64(after.Mallocs-before.Mallocs) / float64(max(last, 1))}
	r.kernel, _ = FindQueue(l.kernelStats(t), labQueue)
	got, _ := l.counters(t)
	t.Logf("offered %.0f pps (%d in %v); verdicts %d in %v: %.0f pps; kernel dropped %d+%d; "+
		"delivered by mark %v; process heap allocs %.3f per packet",
		float64(sent)/sendTime.Seconds(), sent, sendTime.Round(time.Millisecond), last,
		elapsed.Round(time.Millisecond), r.pps, r.kernel.QueueDropped, r.kernel.UserDropped,
		got, r.allocsPerPkt)
	return r
}

// TestIntegrationThroughput logs (does not assert) how many packets per
// second one queue verdicts under a bounded flood; it asserts only that
// every received packet got a verdict and that the path allocates nothing.
func TestIntegrationThroughput(t *testing.T) {
	require.Integration(t)
	l := newLab(t, "t", 1)
	q := openIn(t, l, labQueue, WithLockOSThread())
	runQueue(t, q, portMarkHandler{})
	r := flood(t, l, func() uint64 { return q.Stats().Verdicts() })
	st := q.Stats()
	t.Logf("batches %d, %.1f packets per batch", st.Batches, float64(st.Packets)/float64(max(st.Batches, 1)))
	if st.Verdicts() == 0 || st.Verdicts() != st.Packets {
		t.Errorf("stats %+v: every received packet needs a verdict", st)
	}
	if r.allocsPerPkt > 0.01 {
		t.Errorf("%.4f heap allocations per packet, want none on the receive/verdict path", r.allocsPerPkt)
	}
}

// TestIntegrationThroughputGoNfqueue runs the same flood against
// florianl/go-nfqueue used as documented, for comparison (logged only).
func TestIntegrationThroughputGoNfqueue(t *testing.T) {
	require.Integration(t)
	l := newLab(t, "n", 1)
	var nf *gonfqueue.Nfqueue
	var err error
	inNetns(t, l.lb, func() {
		nf, err = gonfqueue.Open(&gonfqueue.Config{NfQueue: labQueue, MaxPacketLen: DefaultCopyRange,
			MaxQueueLen: DefaultQueueMaxLen, Copymode: gonfqueue.NfQnlCopyPacket,
			WriteTimeout: 100 * time.Millisecond})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer nf.Close()
	var done uint64 // touched only by go-nfqueue's single reader goroutine and, after it stops, by us
	counted := make(chan uint64, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = nf.RegisterWithErrorFunc(ctx, func(a gonfqueue.Attribute) int {
		mark := 1
		if a.Payload != nil {
			if port, ok := udpDstPort(*a.Payload); ok {
				mark = int(markOf(port))
			}
		}
		nf.SetVerdictWithMark(*a.PacketID, gonfqueue.NfAccept, mark)
		done++
		select {
		case <-counted:
		default:
		}
		counted <- done
		return 0
	}, func(error) int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	flood(t, l, func() uint64 {
		select {
		case last = <-counted:
		default:
		}
		return last
	})
}
