package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// Flood of fake later fragments: 4,000 per second, twice the 2,000 per
// second (queue length / fragment lifetime) that fill a queue when every
// one is held. Without the hold limit the kernel then dropped half the
// flood and 23-31% of the flows' requests here (held fragments expire in
// batches, so the queue is full only part of the time).
const (
	floodRate    = 4000
	floodMaxTime = 30 * time.Second // bound, whatever happens to the test
	legitFlows   = 400
)

// TestIntegrationFragmentFloodLeavesTheQueueUsable: fake later fragments
// whose first fragment never comes, sent to a VIP from the client (same
// source, destination and protocol as the client's flows, so the kernel
// puts them on the same queue), are held only up to the queue's hold limit
// and dropped beyond it; the client's flows on that queue keep working.
//
// The flows are a stream over two seconds of the flood (flowStream), each
// one request and one reply tried once (no retries to hide losses, 500 ms
// to answer). Without the flood the lab answers every one; without the
// hold limit a quarter of the requests find the queue full. >= 99% leaves
// room for the odd loss of a busy shared machine while failing on what the
// flood causes.
func TestIntegrationFragmentFloodLeavesTheQueueUsable(t *testing.T) {
	forEachDataplane(t, testIntegrationFragmentFloodLeavesTheQueueUsable)
}

func testIntegrationFragmentFloodLeavesTheQueueUsable(t *testing.T, mode string) {
	require.Lab(t)
	l := dataplaneLab(t, 1, mode)
	_, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	inst := insts[0]
	for i, vip := range []netip.Addr{vip4, vip6} {
		ctx, stop := context.WithTimeout(context.Background(), floodMaxTime)
		var sent atomic.Int64
		flood := make(chan error, 1)
		go func() { flood <- floodLaterFragments(ctx, l, vip, &sent) }()
		// Flood for longer than a held fragment lives (the fragment
		// lifetime, 2 s, plus the expiry tick): held fragments are then at
		// their steady state, the queue full without a hold limit.
		steady := int64(floodRate * (2*time.Second + 2*dataplane.ExpireInterval) / time.Second)
		for deadline := time.Now().Add(15 * time.Second); sent.Load() < steady; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) || len(flood) > 0 {
				stop()
				t.Fatalf("%v: only %d fake fragments sent (flood: %v)", vip, sent.Load(), <-flood)
			}
		}
		waiting, _, _ := inst.Metric("sllbrd_nfqueue_waiting")
		served := flowStream(l, vip, uint16(40000+i*legitFlows))
		stop()
		if err := <-flood; err != nil {
			t.Fatalf("%v flood: %v", vip, err)
		}
		t.Logf("%v: %d fake later fragments sent, %v packets waiting in the queues when the flows started (hold limit %d per queue); %d of %d flows answered",
			vip, sent.Load(), waiting, dataplane.HoldLimit(nfqueue.DefaultQueueMaxLen), served, legitFlows)
		if served*100 < legitFlows*99 {
			t.Errorf("%v: only %d of %d flows answered during the flood, want >= 99%%", vip, served, legitFlows)
		}
	}
	dropped, _, err := inst.Metric(`sllbrd_packets_total{reason="fragment_hold_limit"}`)
	if err != nil || dropped == 0 {
		t.Errorf("fragments dropped at the hold limit: %v (err %v), want > 0", dropped, err)
	}
	// With the limit the queue can only fill while its reader stalls for
	// (queue length - hold limit) / flood rate = 0.38 s.
	if kernel, _, err := inst.Metric("sllbrd_nfqueue_kernel_dropped_total"); err != nil || kernel != 0 {
		t.Errorf("the kernel dropped %v packets at a full queue (err %v), want 0", kernel, err)
	}
}

// flowStream runs legitFlows client flows to vip in rounds of 20 every
// 100 ms (two seconds, eight expiry ticks of the fragment table: held
// fragments come and go meanwhile), each flow one request and one reply
// tried once, and returns how many were answered.
func flowStream(l *lab.Lab, vip netip.Addr, srcPortBase uint16) (served int) {
	const round = 20
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for r := 0; r < legitFlows/round; r++ {
		got, _ := l.Flows(context.Background(), lab.FlowOptions{VIP: vip, Port: 5004, Count: round,
			SrcPortBase: srcPortBase + uint16(r*round), Parallel: round, Attempts: 1, Timeout: 500 * time.Millisecond})
		served += len(got)
		<-tick.C
	}
	return served
}

// floodLaterFragments sends fake later fragments (offset 1480, no first
// fragment ever, a new identification each) from the client to vip at
// floodRate until ctx ends, counting them in sent.
func floodLaterFragments(ctx context.Context, l *lab.Lab, vip netip.Addr, sent *atomic.Int64) error {
	src := lab.ClientAddrs().For(vip)
	return l.Do(lab.ClientNode, func() error {
		fd, sa, err := rawSender(vip)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for id := uint32(1); ; {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			// Catch up on ticks a busy machine skipped: the rate holds.
			for due := int64(time.Since(start) * floodRate / time.Second); sent.Load() < due; id++ {
				if err := unix.Sendto(fd, fakeLaterFragment(src, vip, id), 0, sa); err != nil {
					return fmt.Errorf("send fragment %d: %w", id, err)
				}
				sent.Add(1)
			}
		}
	})
}

// rawSender opens a socket for whole IP packets towards vip.
func rawSender(vip netip.Addr) (int, unix.Sockaddr, error) {
	if vip.Is4() {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		return fd, &unix.SockaddrInet4{Addr: vip.As4()}, err
	}
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_RAW)
	return fd, &unix.SockaddrInet6{Addr: vip.As16()}, err
}

// fakeLaterFragment is the last fragment (offset 1480, 64 bytes) of a UDP
// datagram whose first fragment is never sent.
func fakeLaterFragment(src, dst netip.Addr, id uint32) []byte {
	const udp, payload, offset = 17, 64, 1480
	if src.Is4() {
		b := make([]byte, 20+payload)
		b[0], b[8], b[9] = 0x45, 64, udp
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		binary.BigEndian.PutUint16(b[4:], uint16(id))
		binary.BigEndian.PutUint16(b[6:], offset/8)
		s, d := src.As4(), dst.As4()
		copy(b[12:], s[:])
		copy(b[16:], d[:])
		return b
	}
	b := make([]byte, 40+8+payload)
	b[0], b[6], b[7] = 0x60, 44, 64
	binary.BigEndian.PutUint16(b[4:], uint16(8+payload))
	s, d := src.As16(), dst.As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	b[40] = udp
	binary.BigEndian.PutUint16(b[42:], offset) // offset in 8-byte units << 3, no more fragments
	binary.BigEndian.PutUint32(b[44:], id)
	return b
}
