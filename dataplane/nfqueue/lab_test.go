package nfqueue

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
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
	require.Root(t)
	require.Programs(t, "ip", "iptables-nft", "iptables-nft-save")
	l := &lab{vip: labVIP}
	l.client, _ = netns.New(t, "sllbrd-q-"+tag+"-c")
	l.lb, _ = netns.New(t, "sllbrd-q-"+tag+"-l")
	netns.Run(t, "ip", "-n", l.client, "link", "add", "qc0", "type", "veth", "peer", "name", "ql0", "netns", l.lb)
	netns.Run(t, "ip", "-n", l.client, "addr", "add", labClientAddr.String()+"/24", "dev", "qc0")
	netns.Run(t, "ip", "-n", l.lb, "addr", "add", labLBAddr.String()+"/24", "dev", "ql0")
	netns.Run(t, "ip", "-n", l.lb, "addr", "add", l.vip.String()+"/32", "dev", "lo")
	for _, ns := range []string{l.client, l.lb} {
		netns.Run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	netns.Run(t, "ip", "-n", l.client, "link", "set", "qc0", "up")
	netns.Run(t, "ip", "-n", l.lb, "link", "set", "ql0", "up")
	netns.Run(t, "ip", "-n", l.client, "route", "add", l.vip.String()+"/32", "via", labLBAddr.String())
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
	netns.Run(t, append([]string{"ip", "netns", "exec", l.lb, "iptables-nft"}, args...)...)
}

var (
	markCounter  = regexp.MustCompile(`^\[(\d+):\d+\] -A INPUT .*--mark (0x[0-9a-f]+)`)
	queueCounter = regexp.MustCompile(`^\[(\d+):\d+\] -A PREROUTING .*-j NFQUEUE`)
)

// counters reads the filter INPUT packet counters by mark, and the number
// of packets the NFQUEUE rule saw.
func (l *lab) counters(t *testing.T) (byMark [4]uint64, queued uint64) {
	t.Helper()
	out := netns.Run(t, "ip", "netns", "exec", l.lb, "iptables-nft-save", "-c")
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

// inNetns runs fn on an OS thread inside network namespace ns (netns.Do).
func inNetns(t *testing.T, ns string, fn func()) {
	t.Helper()
	netns.DoOrFail(t, ns, func() error { fn(); return nil })
}
