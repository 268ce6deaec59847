package main

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/nfqueue"
)

func TestQueuesDefaultFitsTheMaximum(t *testing.T) {
	c, err := parseFlags([]string{"--gateway", "g"})
	if err != nil {
		t.Fatalf("no --queues on a %d-CPU host: %v", runtime.NumCPU(), err)
	}
	if c.queues < 1 || c.queues > maxQueues || c.queues > runtime.NumCPU() || c.queuesRule == "" {
		t.Errorf("default --queues %d (rule %q): want 1..min(%d CPUs, %d) and a rule", c.queues, c.queuesRule, runtime.NumCPU(), maxQueues)
	}
}

// TestQueuesDefaultOnABigNode is the shipped Deployment (no --queues) on a
// 96-CPU node: it used to default to 96 and then refuse to start.
func TestQueuesDefaultOnABigNode(t *testing.T) {
	n, rule := defaultQueues(96, noCgroup)
	if n != maxQueues || !strings.Contains(rule, "maximum, 64") || !strings.Contains(rule, "affinity): 96") {
		t.Fatalf("defaultQueues(96 CPUs) = %d, %q; want %d, capped at the maximum", n, rule, maxQueues)
	}
	c := config{gateway: "g", queues: n, copyRange: nfqueue.DefaultCopyRange, metricsAddress: "127.0.0.1:9100",
		dataplane: dataplaneKernel, bpfXDP: xdpOff, onExit: onExitRemove}
	if err := c.validate(); err != nil {
		t.Fatalf("the default does not validate: %v", err)
	}
}

func TestQueuesExplicit(t *testing.T) {
	for _, tc := range []struct {
		arg     string
		wantErr string
	}{
		{"1", ""},
		{"64", ""},
		{"65", "--queues 65: want 1..64"},
		{"0", "--queues 0: want 1..64"},
		{"-3", "--queues -3: want 1..64"},
	} {
		c, err := parseFlags([]string{"--gateway", "g", "--queues", tc.arg})
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("--queues %s: %v", tc.arg, err)
		case tc.wantErr == "" && (strconv.Itoa(c.queues) != tc.arg || c.queuesRule != "--queues"):
			t.Errorf("--queues %s: queues %d rule %q", tc.arg, c.queues, c.queuesRule)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("--queues %s: error %v, want %q", tc.arg, err, tc.wantErr)
		}
	}
}

// TestCopyRangeBounds: the kernel copies at most NFQNL_MAX_COPY_RANGE =
// 0xffff - NLA_HDRLEN = 65531 bytes (net/netfilter/nfnetlink_queue.c) and
// silently clamps larger values; sllbrd needs at least 128.
func TestCopyRangeBounds(t *testing.T) {
	for _, tc := range []struct {
		n  int
		ok bool
	}{{127, false}, {128, true}, {256, true}, {65531, true}, {65532, false}, {65535, false}} {
		_, err := parseFlags([]string{"--gateway", "g", "--copy-range", strconv.Itoa(tc.n)})
		if (err == nil) != tc.ok {
			t.Errorf("--copy-range %d: error %v, want ok=%v", tc.n, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "want 128..65531") {
			t.Errorf("--copy-range %d: error %q does not give the bounds", tc.n, err)
		}
	}
}
