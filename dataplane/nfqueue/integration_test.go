package nfqueue

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// udpDstPort reads the UDP destination port of an IPv4 payload.
func udpDstPort(p []byte) (uint16, bool) {
	if len(p) < 20 || p[0]>>4 != 4 {
		return 0, false
	}
	off := int(p[0]&0xf) * 4
	if len(p) < off+4 {
		return 0, false
	}
	return binary.BigEndian.Uint16(p[off+2:]), true
}

func markOf(port uint16) uint32 { return 1 + uint32(port)%3 }

// portMarkHandler accepts with mark 1 + dst port % 3; packets to holdPort
// are held and their ids handed to held.
type portMarkHandler struct {
	holdPort uint16
	held     chan<- heldPacket
}

type heldPacket struct {
	id   uint32
	mark uint32
}

func (h portMarkHandler) Handle(p *Packet, v *Verdict) {
	port, ok := udpDstPort(p.Payload)
	if !ok {
		return
	}
	if h.held != nil && port == h.holdPort {
		v.Action = Hold
		h.held <- heldPacket{p.ID, markOf(port)}
		return
	}
	v.Action, v.SetMark, v.Mark = Accept, true, markOf(port)
}

// openIn opens queue num inside the lab's lb namespace.
func openIn(t *testing.T, l *lab, num uint16, opts ...Option) *Queue {
	t.Helper()
	var q *Queue
	var err error
	inNetns(t, l.lb, func() { q, err = Open(num, opts...) })
	if err != nil {
		t.Fatalf("open queue %d: %v", num, err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// runQueue runs q until the test ends and checks how Run stopped.
func runQueue(t *testing.T, q *Queue, h Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
}

type udpSender struct{ conn *net.UDPConn }

func newSender(t *testing.T, l *lab, src netip.Addr) *udpSender {
	t.Helper()
	var conn *net.UDPConn
	var err error
	inNetns(t, l.client, func() {
		conn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0)))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &udpSender{conn}
}

// send sends count datagrams to the vip, cycling the destination port over
// ports, 64 per sendmmsg, and stops early at the deadline. It returns how
// many were sent.
func (s *udpSender) send(t *testing.T, count int, ports []uint16, deadline time.Time) int {
	t.Helper()
	const batch = 64
	payload := make([]byte, 18)
	iov := unix.Iovec{Base: &payload[0]}
	iov.SetLen(len(payload))
	addrs := make([]unix.RawSockaddrInet4, len(ports))
	for i, p := range ports {
		addrs[i] = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: labVIP.As4()}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&addrs[i].Port))[:], p)
	}
	hdrs := make([]mmsghdr, batch)
	raw, err := s.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for sent < count && time.Now().Before(deadline) {
		n := min(batch, count-sent)
		for i := range n {
			h := &hdrs[i].hdr
			h.Name = (*byte)(unsafe.Pointer(&addrs[(sent+i)%len(ports)]))
			h.Namelen = unix.SizeofSockaddrInet4
			h.Iov = &iov
			h.SetIovlen(1)
		}
		var done uintptr
		var errno unix.Errno
		err := raw.Write(func(fd uintptr) bool {
			done, _, errno = unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(n), 0, 0, 0)
			return errno != unix.EAGAIN
		})
		if err != nil || errno != 0 {
			t.Fatalf("sendmmsg after %d: %v %v", sent, err, errno)
		}
		sent += int(done)
	}
	return sent
}

func waitFor(timeout time.Duration, cond func() bool) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestIntegrationMarks proves that marks set by the handler reach the
// kernel, that every packet gets exactly one verdict (held ones through
// Release from another goroutine), and that the kernel dropped nothing.
func TestIntegrationMarks(t *testing.T) {
	l := newLab(t, "m", 1)
	q := openIn(t, l, labQueue)
	inNetns(t, l.lb, func() {
		q2, err := Open(labQueue)
		if err == nil {
			q2.Close()
		}
		if !errors.Is(err, unix.EPERM) {
			t.Errorf("binding a bound queue again: %v, want EPERM", err)
		}
	})
	held := make(chan heldPacket, 4096)
	var releasers sync.WaitGroup
	releasers.Go(func() {
		for h := range held {
			if err := q.Release(h.id, Verdict{Action: Accept, SetMark: true, Mark: h.mark}); err != nil {
				t.Errorf("release %d: %v", h.id, err)
			}
		}
	})
	runQueue(t, q, portMarkHandler{holdPort: 7003, held: held})
	t.Cleanup(func() { close(held); releasers.Wait() })

	ports := []uint16{7000, 7001, 7002, 7003, 7004, 7005, 7006, 7007}
	s := newSender(t, l, labClientAddr)
	const bursts, burst = 10, 240
	deadline := time.Now().Add(30 * time.Second)
	for i := range bursts {
		s.send(t, burst, ports, deadline)
		want := uint64((i + 1) * burst)
		if !waitFor(5*time.Second, func() bool { return q.Stats().Verdicts() >= want }) {
			t.Fatalf("after burst %d: %+v, want %d verdicts", i, q.Stats(), want)
		}
	}
	const total = bursts * burst
	var want [4]uint64
	for i := range total {
		want[markOf(ports[i%len(ports)])]++
	}
	got, queued := l.counters(t)
	st := q.Stats()
	t.Logf("stats %+v, marks %v", st, got)
	if got != want || queued != total {
		t.Errorf("delivered by mark %v (queued %d), want %v (%d)", got, queued, want, total)
	}
	if st.Packets != total || st.Accepted != total || st.Dropped != 0 ||
		st.Held != total/8 || st.Released != total/8 {
		t.Errorf("stats %+v, want %d packets all accepted, %d held and released", st, total, total/8)
	}
	ks, ok := FindQueue(l.kernelStats(t), labQueue)
	if !ok || ks.QueueDropped != 0 || ks.UserDropped != 0 || ks.Waiting != 0 || ks.CopyRange != DefaultCopyRange {
		t.Errorf("kernel queue %+v (found %v): want no drops, none waiting", ks, ok)
	}
}

// TestIntegrationFailClosed proves that without a reader the queued
// packets are dropped, not passed on unmarked.
func TestIntegrationFailClosed(t *testing.T) {
	l := newLab(t, "f", 1)
	s := newSender(t, l, labClientAddr)
	const total = 200
	s.send(t, total, []uint16{7000, 7001}, time.Now().Add(10*time.Second))
	var got [4]uint64
	var queued uint64
	waitFor(2*time.Second, func() bool { got, queued = l.counters(t); return queued >= total })
	if queued != total || got != [4]uint64{} {
		t.Errorf("no reader: queued %d (want %d), delivered by mark %v (want none)", queued, total, got)
	}

	// A queue that was bound and closed drops too.
	q := openIn(t, l, labQueue)
	q.Close()
	s.send(t, total, []uint16{7000}, time.Now().Add(10*time.Second))
	waitFor(2*time.Second, func() bool { got, queued = l.counters(t); return queued >= 2*total })
	if queued != 2*total || got != [4]uint64{} {
		t.Errorf("closed reader: queued %d (want %d), delivered by mark %v (want none)", queued, 2*total, got)
	}
}

// TestIntegrationGroup runs two queues balanced by the kernel (it hashes
// addresses, so the client sends from several sources).
func TestIntegrationGroup(t *testing.T) {
	l := newLab(t, "g", 2)
	var srcs []netip.Addr
	for i := range 6 {
		a := netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i)})
		netns.Run(t, "ip", "-n", l.client, "addr", "add", a.String()+"/24", "dev", "qc0")
		srcs = append(srcs, a)
	}
	var g *Group
	var err error
	inNetns(t, l.lb, func() { g, err = OpenGroup(labQueue, 2) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, func(*Queue) Handler { return portMarkHandler{} }) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Group.Run returned %v", err)
		}
	}()
	const per = 201 // a multiple of len(ports)
	ports := []uint16{7000, 7001, 7002}
	for _, src := range srcs {
		newSender(t, l, src).send(t, per, ports, time.Now().Add(10*time.Second))
	}
	total := uint64(per * len(srcs))
	if !waitFor(5*time.Second, func() bool { return g.Stats().Verdicts() >= total }) {
		t.Fatalf("group stats %+v, want %d verdicts", g.Stats(), total)
	}
	got, _ := l.counters(t)
	third := total / 3
	if got != [4]uint64{0, third, third, third} {
		t.Errorf("delivered by mark %v, want %d each for marks 1..3", got, third)
	}
	for _, q := range g.Queues() {
		t.Logf("queue %d: %+v", q.Number(), q.Stats())
		if q.Stats().Packets == 0 {
			t.Logf("queue %d got no packets (the kernel's hash put all sources on one queue)", q.Number())
		}
	}
	if n := len(l.kernelStats(t)); n != 2 {
		t.Errorf("%d queues bound in the kernel, want 2", n)
	}
}

// TestIntegrationRunStops checks how Run ends: ErrRunning for a second
// concurrent Run, os.ErrClosed after Close, and Run again after a
// cancelled Run.
func TestIntegrationRunStops(t *testing.T) {
	l := newLab(t, "r", 1)
	q := openIn(t, l, labQueue)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx, portMarkHandler{}) }()
	waitFor(time.Second, func() bool { return q.running.Load() })
	if err := q.Run(ctx, portMarkHandler{}); !errors.Is(err, ErrRunning) {
		t.Errorf("second Run = %v, want ErrRunning", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Run = %v", err)
	}
	go func() { done <- q.Run(context.Background(), portMarkHandler{}) }()
	s := newSender(t, l, labClientAddr)
	s.send(t, 30, []uint16{7000}, time.Now().Add(5*time.Second))
	if !waitFor(5*time.Second, func() bool { return q.Stats().Accepted == 30 }) {
		t.Errorf("Run after a cancelled Run: %+v, want 30 accepted", q.Stats())
	}
	q.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("Run after Close = %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Close")
	}
}

// holdUntilFlush holds packets to port 7003 and, from inside Handle,
// releases them all (with mark 3) when a packet to port 7000 arrives, so
// that the released verdicts join that batch's sendmsg.
type holdUntilFlush struct {
	t    *testing.T
	q    *Queue
	held []uint32
}

func (h *holdUntilFlush) Handle(p *Packet, v *Verdict) {
	port, _ := udpDstPort(p.Payload)
	switch port {
	case 7003:
		v.Action = Hold
		h.held = append(h.held, p.ID)
		return
	case 7000:
		for _, id := range h.held {
			if err := h.q.Release(id, Verdict{Action: Accept, SetMark: true, Mark: 3}); err != nil {
				h.t.Errorf("release %d: %v", id, err)
			}
		}
		h.held = h.held[:0]
	}
	v.Action, v.SetMark, v.Mark = Accept, true, markOf(port)
}

func TestIntegrationReleaseInHandler(t *testing.T) {
	l := newLab(t, "h", 1)
	q := openIn(t, l, labQueue)
	h := &holdUntilFlush{t: t, q: q}
	runQueue(t, q, h)
	s := newSender(t, l, labClientAddr)
	s.send(t, 20, []uint16{7003}, time.Now().Add(5*time.Second))
	if !waitFor(5*time.Second, func() bool { return q.Stats().Held == 20 }) {
		t.Fatalf("stats %+v, want 20 held", q.Stats())
	}
	if got, _ := l.counters(t); got != [4]uint64{} {
		t.Fatalf("held packets were delivered: %v", got)
	}
	s.send(t, 1, []uint16{7000}, time.Now().Add(5*time.Second))
	if !waitFor(5*time.Second, func() bool { got, _ := l.counters(t); return got == [4]uint64{0, 0, 1, 20} }) {
		got, _ := l.counters(t)
		t.Errorf("delivered by mark %v, want [0 0 1 20]; stats %+v", got, q.Stats())
	}
	if st := q.Stats(); st.Released != 20 || st.Accepted != 21 || st.VerdictErrors != 0 {
		t.Errorf("stats %+v, want 20 released and 21 accepted", st)
	}
}
