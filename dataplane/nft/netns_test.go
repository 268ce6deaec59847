package nft

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var netnsSeq atomic.Int32

// newNetns creates a fresh network namespace named sllbrd-k-nft-PID-N,
// deleted in t.Cleanup, and returns its name and an open fd for it. It skips
// the test when not root or when ip(8) is missing.
func newNetns(t *testing.T) (string, int) {
	t.Helper()
	return newNetnsTB(t)
}

// newNetnsB is newNetns for benchmarks.
func newNetnsB(b *testing.B) (string, int) {
	b.Helper()
	return newNetnsTB(b)
}

func newNetnsTB(t testing.TB) (string, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8)")
	}
	name := fmt.Sprintf("sllbrd-k-nft-%d-%d", os.Getpid(), netnsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatalf("open netns: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return name, int(f.Fd())
}

// run runs a command and returns its stdout; it fails the test on error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, msg)
	}
	return string(out)
}

// inNetns runs a command inside netns ns.
func inNetns(t *testing.T, ns string, args ...string) string {
	t.Helper()
	return run(t, "ip", append([]string{"netns", "exec", ns}, args...)...)
}

// inNetnsDo runs fn on an OS thread switched into netns ns. Sockets created
// by fn stay in ns whatever goroutine later uses them. The thread is thrown
// away afterwards (never unlocked), so no goroutine runs in ns by accident.
func inNetnsDo(t *testing.T, ns string, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	if err := <-errc; err != nil {
		t.Fatalf("in netns %s: %v", ns, err)
	}
}

// listenUDP opens a UDP socket on addr inside ns, closed in t.Cleanup.
func listenUDP(t *testing.T, ns, network, addr string) net.PacketConn {
	t.Helper()
	var pc net.PacketConn
	inNetnsDo(t, ns, func() (err error) {
		pc, err = net.ListenPacket(network, addr)
		return err
	})
	t.Cleanup(func() { pc.Close() })
	return pc
}

// delivered sends count datagrams carrying tag from src to dst and reports
// how many with that tag reach dst within a bounded wait (200 ms after the
// last one); datagrams with other tags (late ones of earlier phases) are
// ignored.
func delivered(t *testing.T, src, dst net.PacketConn, to netip.AddrPort, count int, tag byte) int {
	t.Helper()
	for range count {
		if _, err := src.WriteTo([]byte{tag}, net.UDPAddrFromAddrPort(to)); err != nil {
			t.Fatalf("send to %s: %v", to, err)
		}
	}
	got := 0
	buf := make([]byte, 64)
	deadline := time.Now().Add(200 * time.Millisecond)
	for got < count {
		_ = dst.SetReadDeadline(deadline)
		n, _, err := dst.ReadFrom(buf)
		if err != nil {
			break
		}
		if n == 1 && buf[0] == tag {
			got++
		}
	}
	return got
}
