package main

import (
	"io"
	"testing"
	"time"
)

const metricsBody = `# HELP sllbrd_nfqueue_packets_total Packets received from the kernel queue.
# TYPE sllbrd_nfqueue_packets_total counter
sllbrd_nfqueue_packets_total{queue="0"} 10
sllbrd_nfqueue_packets_total{queue="1"} 20
sllbrd_nfqueue_packets_totalx{queue="1"} 1000
sllbrd_nfqueue_batches_total{queue="0"} 3
sllbrd_nfqueue_batches_total{queue="1"} 2
sllbrd_nfqueue_verdicts_total{action="accept",queue="0"} 9
sllbrd_nfqueue_verdicts_total{action="accept",queue="1"} 19
sllbrd_nfqueue_verdicts_total{action="drop",queue="0"} 1
sllbrd_nfqueue_kernel_dropped_total{queue="0"} 7
sllbrd_nfqueue_kernel_dropped_total{queue="1"} 1e+06
sllbrd_nfqueue_kernel_user_dropped_total{queue="0"} 0
`

func TestParseNFQ(t *testing.T) {
	got, err := parseNFQ(metricsBody)
	if err != nil {
		t.Fatal(err)
	}
	want := nfqCounters{packets: 30, batches: 5, accepted: 28, dropped: 1, kernelDropped: 1000007}
	if got != want {
		t.Errorf("parseNFQ = %+v, want %+v", got, want)
	}
	if pb := got.perBatch(); pb != 6 {
		t.Errorf("perBatch = %v, want 6", pb)
	}
	if d := got.minus(nfqCounters{packets: 10, batches: 5}); d.packets != 20 || d.batches != 0 || d.accepted != 28 {
		t.Errorf("minus = %+v", d)
	}
}

func TestParseNFQErrors(t *testing.T) {
	tests := []struct{ name, body string }{
		{"missing counter", "sllbrd_nfqueue_packets_total{queue=\"0\"} 1\n"},
		{"bad value", metricsBody + "sllbrd_nfqueue_batches_total{queue=\"2\"} many\n"},
	}
	for _, tc := range tests {
		if _, err := parseNFQ(tc.body); err == nil {
			t.Errorf("%s: parseNFQ succeeded", tc.name)
		}
	}
}

func TestParsePerfReport(t *testing.T) {
	out := `# To display the perf.data header info, please use --header/--header-only options.
#
# Overhead  Shared Object      Symbol
# ........  .................  ......
#
    12.50%  [kernel.kallsyms]  [k] nfqnl_recv_verdict
     0.75%  sllbrd             [.] github.com/sllbrd/sllbrd/dataplane.(*Engine).Decide


#
# (Tip: use --percent-limit)
#
`
	got := parsePerfReport(out)
	want := []share{{12.5, "[kernel.kallsyms] [k] nfqnl_recv_verdict"},
		{0.75, "sllbrd [.] github.com/sllbrd/sllbrd/dataplane.(*Engine).Decide"}}
	if len(got) != len(want) {
		t.Fatalf("parsePerfReport = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("share %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseOptions(t *testing.T) {
	tests := []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"-rounds", "5", "-duration", "2s", "-search=false"}, true},
		{[]string{"-rounds", "0"}, false},
		{[]string{"-duration", "1m"}, false},
		{[]string{"-senders", "9"}, false},
		{[]string{"-profile-rounds", "1"}, true},
		{[]string{"-profile-rounds", "0"}, false},
		{[]string{"-profile-rounds", "6"}, false},
		{[]string{"extra"}, false},
		{[]string{"-nosuchflag"}, false},
	}
	for _, tc := range tests {
		o, err := parseOptions(tc.args, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("parseOptions(%v) error %v, want ok %v", tc.args, err, tc.ok)
		}
		if tc.args == nil && (o.rounds != 3 || o.duration != 4*time.Second || !o.search || !o.profile || o.profileRounds != 3) {
			t.Errorf("defaults = %+v", o)
		}
	}
}
