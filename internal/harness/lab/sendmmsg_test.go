package lab

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMmsgSenderRoundRobin sends over a datagram socket pair (no root needed)
// and checks the packets arrive whole, in round-robin order across batches,
// and that only packets starting a datagram count as datagrams.
func TestMmsgSenderRoundRobin(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	pkts := [][]byte{[]byte("a0"), []byte("b11"), []byte("c222")}
	s := newMmsgSender(fds[0], pkts, []bool{true, false, true}, 2) // b: a later fragment
	var want [][]byte
	for range 4 { // 8 packets: a b c a b c a b
		n, err := s.sendBatch()
		if err != nil || n != 2 {
			t.Fatalf("sendBatch = %d, %v; want 2, nil", n, err)
		}
	}
	for i := range 8 {
		want = append(want, pkts[i%3])
	}
	if s.datagrams != 5 { // a c a c a
		t.Errorf("%d datagrams counted, want 5", s.datagrams)
	}
	buf := make([]byte, 64)
	for i, w := range want {
		n, _, err := unix.Recvfrom(fds[1], buf, unix.MSG_DONTWAIT)
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if !bytes.Equal(buf[:n], w) {
			t.Errorf("packet %d = %q, want %q", i, buf[:n], w)
		}
	}
}

func TestMmsgSenderAllocatesNothing(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	s := newMmsgSender(fds[0], [][]byte{make([]byte, 18), make([]byte, 18)}, nil, 4)
	buf := make([]byte, 64)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := s.sendBatch(); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			_, _ = unix.Read(fds[1], buf)
		}
	})
	if allocs != 0 {
		t.Errorf("sendBatch allocates %v times per batch, want 0", allocs)
	}
}
