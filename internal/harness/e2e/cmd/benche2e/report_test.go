package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want spread
	}{
		{"none", nil, spread{}},
		{"one", []float64{3}, spread{3, 3, 3}},
		{"odd count, unsorted", []float64{5, 1, 3}, spread{3, 1, 5}},
		{"even count: mean of the middle two", []float64{4, 1, 2, 10}, spread{3, 1, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.in); got != tc.want {
				t.Errorf("summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSpreadFormat(t *testing.T) {
	tests := []struct {
		s    spread
		want string
	}{
		{spread{120e3, 120e3, 120e3}, "120.0"},
		{spread{120e3, 100e3, 150.5e3}, "120.0 [100.0-150.5]"},
	}
	for _, tc := range tests {
		if got := tc.s.format(1e-3, 1); got != tc.want {
			t.Errorf("%+v.format = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// blastAt is a one-second blast that sent sent and delivered recv packets.
func blastAt(sent, recv uint64) lab.BlastResult {
	return lab.BlastResult{Sent: sent, Received: recv, Elapsed: time.Second}
}

// TestRatiosPairRoundsWithTheirReference: each sllbrd round is divided by
// its own reference's same round, not by another setup's.
func TestRatiosPairRoundsWithTheirReference(t *testing.T) {
	ss := []setup{{name: "k1"}, {name: "s1", dataplane: dataplaneNFQueue, queues: 1, reference: 0}, {name: "k2"},
		{name: "s2", dataplane: dataplaneNFQueue, queues: 2, reference: 2}}
	r := &report{setups: ss, samples: map[string][]sample{
		"k1": {{blast: blastAt(100, 100)}, {blast: blastAt(200, 200)}, {blast: blastAt(100, 100)}},
		"s1": {{blast: blastAt(100, 50)}, {blast: blastAt(200, 200)}, {blast: blastAt(100, 60)}},
		"k2": {{blast: blastAt(10, 10)}},
		"s2": {{blast: blastAt(10, 5)}},
	}}
	if got, want := r.ratios(ss[1]), (spread{0.6, 0.5, 1}); got != want {
		t.Errorf("ratios(s1) = %+v, want %+v", got, want)
	}
	if got, want := r.ratios(ss[3]), (spread{0.5, 0.5, 0.5}); got != want {
		t.Errorf("ratios(s2) = %+v, want %+v", got, want)
	}
}

// TestReportVerdict: the report says whether each sllbrd setup reaches
// its goal: NFQLB's share of kernel forwarding for the nfqueue dataplane,
// 0.95 for the kernel path, and twice the nfqueue dataplane unpinned.
func TestReportVerdict(t *testing.T) {
	ss := []setup{{name: "kernel"}, {name: "fast", dataplane: dataplaneNFQueue, queues: 1, pinned: true},
		{name: "slow", dataplane: dataplaneNFQueue, queues: 1, pinned: true}, {name: "fanout", dataplane: dataplaneNFQueue, queues: 2},
		{name: "kp", dataplane: dataplaneKernel, queues: 1}, {name: "kp-mixed", dataplane: dataplaneKernel, queues: 1, fragmentEvery: 10}}
	proc := lab.ProcStats{User: time.Millisecond, System: 9 * time.Millisecond, RSS: 20 << 20}
	r := &report{setups: ss, samples: map[string][]sample{
		"kernel":   {{blast: blastAt(1000, 1000), machine: 2 * time.Millisecond}},
		"fast":     {{blast: blastAt(1000, 600), cpu: proc}},
		"slow":     {{blast: blastAt(1000, 400), cpu: lab.ProcStats{User: time.Millisecond, RSS: 20 << 20}}},
		"fanout":   {{blast: blastAt(1000, 300), cpu: proc}},
		"kp":       {{blast: blastAt(1000, 960), cpu: proc}},
		"kp-mixed": {{blast: blastAt(1000, 912), cpu: proc}},
	}}
	var out bytes.Buffer
	r.write(&out)
	text := out.String()
	for _, want := range []string{"fast: 0.60 of kernel (median): meets NFQLB's goal 0.49", "slow: 0.40 of kernel (median): DOES NOT MEET NFQLB's",
		"kp: 0.96 of kernel (median): meets the kernel path's goal 0.95", "10/90", "kernel  1.0  1  0.00  2.00",
		"fanout: 0.30 of kernel (median): meets NFQLB's (unpinned) goal 0.24", "kp-mixed / kp: 0.95"} {
		if !strings.Contains(strings.Join(strings.Fields(text), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "kp-mixed: ") {
		t.Errorf("the mixed case is held to a goal of its own:\n%s", text)
	}
}

func TestParseBusy(t *testing.T) {
	got, err := parseBusy("cpu  100 20 300 5000 40 6 7 8 0 0")
	if want := time.Duration(100+20+300+6+7+8) * 10 * time.Millisecond; err != nil || got != want {
		t.Errorf("parseBusy = %v, %v; want %v", got, err, want)
	}
	if _, err := parseBusy("intr 1 2 3"); err == nil {
		t.Error("parseBusy accepted another line")
	}
}

func TestPathSamples(t *testing.T) {
	report := `# Samples: 1K of event 'cpu-clock'
    40.00%           400  benche2e
    30.00%           300  ksoftirqd/1
    20.00%           200  cc1
    10.00%           100  sllbrd
`
	if got := pathSamples(parsePerfReport(report)); got != 800 {
		t.Errorf("pathSamples = %d, want 800 (benche2e, ksoftirqd, sllbrd)", got)
	}
}

// TestDecisionShare sums netfilter's, nf_tables', the jhash's and the
// policy rules' symbols and nothing else.
func TestDecisionShare(t *testing.T) {
	profile := parsePerfReport(`# Samples: 10K of event 'cpu-clock'
     4.00%  [k] nft_do_chain
     3.50%  [k] fib_table_lookup
     2.00%  [k] nft_hash_lookup_fast
     1.50%  [k] nf_hook_slow
     1.00%  [k] memcmp
     0.50%  [k] fib_rules_lookup
     0.40%  [k] fib4_rule_match
     0.30%  [k] nft_jhash_eval
     0.20%  [k] __nft_trace_packet
     0.10%  [k] ip_forward
`)
	if got, want := decisionShare(profile), 4.0+2.0+1.5+0.5+0.4+0.3+0.2; fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", want) {
		t.Errorf("decisionShare = %.2f, want %.2f", got, want)
	}
	if got := estimatedRatio(10, 5); fmt.Sprintf("%.4f", got) != "0.9474" {
		t.Errorf("estimatedRatio(10, 5) = %.4f, want 0.9474 (90/95)", got)
	}
}

// TestReportFloor: the floor is held to the kernel path's goal, and the
// profiles' decision shares give the kernel path's and the floor's
// estimated ratios against forwarding's profile of the same round.
func TestReportFloor(t *testing.T) {
	ss := []setup{{name: "kernel"}, {name: "kp", dataplane: dataplaneKernel, queues: 1}, {name: "floor", floor: true}}
	r := &report{setups: ss, samples: map[string][]sample{
		"kernel": {{blast: blastAt(1000, 1000)}},
		"kp":     {{blast: blastAt(1000, 900), cpu: lab.ProcStats{RSS: 1}}},
		"floor":  {{blast: blastAt(1000, 970)}},
	}, profiles: []*profileResult{
		{setup: "kernel", kind: kindForwarding, round: 1, bySym: []share{{5, "[k] nft_do_chain"}, {50, "[k] veth_xmit"}}},
		{setup: "kp", kind: kindKernelPath, round: 1, bySym: []share{{15, "[k] nft_do_chain"}}},
		{setup: "floor", kind: kindFloor, round: 1, bySym: []share{{10, "[k] nft_do_chain"}}},
		{setup: "nfq", kind: kindNFQueue, round: 1, bySym: []share{{20, "[k] nf_queue"}}},
		{setup: "kernel", kind: kindForwarding, round: 2, bySym: []share{{10, "[k] nft_do_chain"}}},
		{setup: "kp", kind: kindKernelPath, round: 2, bySym: []share{{19, "[k] nft_do_chain"}, {1, "[k] jhash"}}},
		{setup: "floor", kind: kindFloor, round: 2, note: "perf failed"},
	}}
	var out bytes.Buffer
	r.write(&out)
	text := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"floor: 0.97 of kernel (median): meets (the least any nftables Maglev ruleset does) the kernel path's goal 0.95",
		"kp: 0.90 of kernel (median): DOES NOT MEET the kernel path's goal 0.95",
		"floor 1.0 0.97 3.00 0.00 - -",
		"kernel: 7.5 [5.0-10.0]% (2 profiles)", "nfq: 20.0% (1 profiles) first profile: nf_queue 20.00",
		// kp: 85/95 in round 1, 80/90 in round 2.
		"kp: 17.5 [15.0-20.0]% (2 profiles): 0.892 [0.889-0.895] of kernel if the rest",
		"floor: 10.0% (1 profiles): 0.947 of kernel if the rest", "first profile: nft_do_chain 15.00",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(text, "nfq: 20.0% (1 profiles):") {
		t.Errorf("the nfqueue dataplane's decision (in userspace) got an estimate:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "profile of kp"); n != 1 {
		t.Errorf("%d symbol lists of kp, want the first round's only:\n%s", n, out.String())
	}
}
