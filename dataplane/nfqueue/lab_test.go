package nfqueue

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// lab is a client namespace and a load-balancer namespace joined by a veth
// pair. The client routes vip through the veth; in the lb namespace an
// iptables-nft rule queues UDP to vip into queue labQueue(s), and filter
// INPUT counts and drops the packets by mark (0..3), so that nothing else
// (sockets, ICMP errors) takes part.
type lab struct {
	client, lb string
	vip        netip.Addr
}

var (
	labClientAddr = netip.MustParseAddr("192.0.2.1")
	labLBAddr     = netip.MustParseAddr("192.0.2.2")
	labVIP        = netip.MustParseAddr("198.51.100.1")
)

const labQueue = 7

// newLab builds the lab, queueing to queues [labQueue, labQueue+queues), or
// skips the test when not root or the tools are missing. Everything it
// creates is deleted by name in t.Cleanup, also on failure.
func newLab(t *testing.T, tag string, queues int) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	for _, tool := range []string{"ip", "iptables-nft", "iptables-nft-save"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	l := &lab{
		client: fmt.Sprintf("sllbrd-q-%d-%s-c", os.Getpid(), tag),
		lb:     fmt.Sprintf("sllbrd-q-%d-%s-l", os.Getpid(), tag),
		vip:    labVIP,
	}
	for _, ns := range []string{l.client, l.lb} {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	run(t, "ip", "-n", l.client, "link", "add", "qc0", "type", "veth", "peer", "name", "ql0", "netns", l.lb)
	run(t, "ip", "-n", l.client, "addr", "add", labClientAddr.String()+"/24", "dev", "qc0")
	run(t, "ip", "-n", l.lb, "addr", "add", labLBAddr.String()+"/24", "dev", "ql0")
	run(t, "ip", "-n", l.lb, "addr", "add", l.vip.String()+"/32", "dev", "lo")
	for _, ns := range []string{l.client, l.lb} {
		run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	run(t, "ip", "-n", l.client, "link", "set", "qc0", "up")
	run(t, "ip", "-n", l.lb, "link", "set", "ql0", "up")
	run(t, "ip", "-n", l.client, "route", "add", l.vip.String()+"/32", "via", labLBAddr.String())
	l.rules(t, queues)
	return l
}

func (l *lab) rules(t *testing.T, queues int) {
	queue := []string{"--queue-num", strconv.Itoa(labQueue)}
	if queues > 1 {
		queue = []string{"--queue-balance", fmt.Sprintf("%d:%d", labQueue, labQueue+queues-1)}
	}
	l.ipt(t, append([]string{"-t", "mangle", "-A", "PREROUTING", "-p", "udp", "-d", l.vip.String(),
		"-j", "NFQUEUE"}, queue...)...)
	for mark := range 4 {
		l.ipt(t, "-t", "filter", "-A", "INPUT", "-p", "udp", "-d", l.vip.String(),
			"-m", "mark", "--mark", strconv.Itoa(mark), "-j", "DROP")
	}
}

func (l *lab) ipt(t *testing.T, args ...string) {
	t.Helper()
	run(t, append([]string{"ip", "netns", "exec", l.lb, "iptables-nft"}, args...)...)
}

var (
	markCounter  = regexp.MustCompile(`^\[(\d+):\d+\] -A INPUT .*--mark (0x[0-9a-f]+)`)
	queueCounter = regexp.MustCompile(`^\[(\d+):\d+\] -A PREROUTING .*-j NFQUEUE`)
)

// counters reads the filter INPUT packet counters by mark, and the number
// of packets the NFQUEUE rule saw.
func (l *lab) counters(t *testing.T) (byMark [4]uint64, queued uint64) {
	t.Helper()
	out := run(t, "ip", "netns", "exec", l.lb, "iptables-nft-save", "-c")
	for line := range strings.SplitSeq(out, "\n") {
		if m := markCounter.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseUint(m[1], 10, 64)
			mark, _ := strconv.ParseUint(m[2], 0, 8)
			byMark[mark] = n
		}
		if m := queueCounter.FindStringSubmatch(line); m != nil {
			queued, _ = strconv.ParseUint(m[1], 10, 64)
		}
	}
	return byMark, queued
}

// kernelStats reads the lb namespace's nfnetlink_queue table.
func (l *lab) kernelStats(t *testing.T) []KernelQueueStats {
	t.Helper()
	var all []KernelQueueStats
	var err error
	inNetns(t, l.lb, func() {
		all, err = ReadProcStats("/proc/thread-self/net/netfilter/nfnetlink_queue")
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// inNetns runs fn on an OS thread switched into network namespace ns.
// Sockets fn opens stay in ns. If the thread cannot switch back it is not
// unlocked, so the runtime retires it.
func inNetns(t *testing.T, ns string, fn func()) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		err := withNetns(ns, fn)
		if err == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatalf("netns %s: %v", ns, err)
	}
}

func withNetns(ns string, fn func()) (err error) {
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(orig)
	target, err := unix.Open("/var/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return err
	}
	defer func() {
		if rerr := unix.Setns(orig, unix.CLONE_NEWNET); rerr != nil && err == nil {
			err = fmt.Errorf("switch back: %w", rerr)
		}
	}()
	fn()
	return nil
}
