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
	text, out := writeReport(r)
	wantAll(t, text, out,
		"floor: 0.97 of kernel (median): meets (the least any nftables Maglev ruleset does) the kernel path's goal 0.95",
		"kp: 0.90 of kernel (median): DOES NOT MEET the kernel path's goal 0.95",
		"floor 1.0 0.97 3.00 0.00 - -",
		"kernel: 7.5 [5.0-10.0]% (2 profiles)", "nfq: 20.0% (1 profiles) first profile: nf_queue 20.00",
		// kp: 85/95 in round 1, 80/90 in round 2.
		"kp: 17.5 [15.0-20.0]% (2 profiles): 0.892 [0.889-0.895] of kernel if the rest",
		"floor: 10.0% (1 profiles): 0.947 of kernel if the rest", "first profile: nft_do_chain 15.00")
	if strings.Contains(text, "nfq: 20.0% (1 profiles):") {
		t.Errorf("the nfqueue dataplane's decision (in userspace) got an estimate:\n%s", out)
	}
	if n := strings.Count(out, "profile of kp"); n != 1 {
		t.Errorf("%d symbol lists of kp, want the first round's only:\n%s", n, out)
	}
}

// TestReportBPF: the eBPF datapath is held to 1.3x forwarding unpinned
// (2x at XDP) and reported pinned with no goal; it is compared with the
// kernel path of its placement, by received rate and loss-free rate; its
// program's forwarded share, its CPU per datagram with the ratio it
// implies against forwarding's profile of the same round, and its
// program's share of the samples are printed.
func TestReportBPF(t *testing.T) {
	ss := referToForwarding([]setup{
		{name: "k1", senders: 1, pinned: true},
		{name: "kp1", dataplane: dataplaneKernel, queues: 1, pinned: true},
		{name: "bpf1", dataplane: dataplaneBPF, queues: 1, pinned: true},
		{name: "k2", senders: 2},
		{name: "kp2", dataplane: dataplaneKernel, queues: 2},
		{name: "bpf2", dataplane: dataplaneBPF, queues: 2},
		{name: "xdp2", dataplane: dataplaneBPF, queues: 2, xdpArgs: []string{"--some-xdp-flag"}},
	})
	proc := lab.ProcStats{User: time.Millisecond, RSS: 20 << 20}
	r := &report{setups: ss, samples: map[string][]sample{
		"k1":   {{blast: blastAt(1000, 1000)}, {blast: blastAt(1000, 1000)}},
		"kp1":  {{blast: blastAt(1000, 900), cpu: proc}, {blast: blastAt(1000, 900), cpu: proc}},
		"bpf1": {{blast: blastAt(1200, 1200), cpu: proc, bpf: bpfCounters{"redirect": 1200}}, {blast: blastAt(1100, 1100), cpu: proc, bpf: bpfCounters{"redirect": 1100}}},
		"k2":   {{blast: blastAt(1000, 1000)}, {blast: blastAt(2000, 2000)}},
		"kp2":  {{blast: blastAt(1000, 800), cpu: proc}, {blast: blastAt(2000, 1600), cpu: proc}},
		"bpf2": {{blast: blastAt(1500, 1500), cpu: proc, bpf: bpfCounters{"redirect": 1500}}, {blast: blastAt(2400, 2400), cpu: proc, bpf: bpfCounters{"redirect": 2376}}},
		"xdp2": {{blast: blastAt(1900, 1900), cpu: proc, bpf: bpfCounters{"xdp-redirect": 1900}}, {blast: blastAt(3800, 3800), cpu: proc, bpf: bpfCounters{"xdp-redirect": 3800}}},
	}, lossFree: []*searchResult{
		{setup: "k2", best: 500e3, senderLimited: true}, {setup: "kp2", best: 400e3},
		{setup: "bpf2", best: 600e3}, {setup: "xdp2", best: 0},
	}, profiles: []*profileResult{
		{setup: "k2", kind: kindForwarding, round: 1, perPacket: 3000 * time.Nanosecond, bySym: []share{{5, "[k] nf_hook_slow"}}},
		{setup: "kp2", kind: kindKernelPath, round: 1, perPacket: 3500 * time.Nanosecond, bySym: []share{{15, "[k] nft_do_chain"}}},
		{setup: "bpf2", kind: kindBPF, round: 1, perPacket: 2000 * time.Nanosecond,
			bySym: []share{{6, "[k] bpf_prog_6deef7357e7b4530_sllbrd_ingress"}, {1, "[k] nf_hook_slow"}}},
		{setup: "k2", kind: kindForwarding, round: 2, perPacket: 4000 * time.Nanosecond},
		{setup: "bpf2", kind: kindBPF, round: 2, perPacket: 2500 * time.Nanosecond, bySym: []share{{4, "[k] bpf_prog_6deef7357e7b4530_sllbrd_ingress"}}},
		{setup: "xdp2", kind: kindBPF, round: 1, note: "perf failed"},
	}}
	text, out := writeReport(r)
	wantAll(t, text, out,
		"bpf1: 1.15 [1.10-1.20] of k1 (median): no goal in this placement (reported)",
		"bpf2: 1.35 [1.20-1.50] of k2 (median): meets the eBPF datapath's goal 1.30",
		"xdp2: 1.90 of k2 (median): DOES NOT MEET the eBPF datapath's at XDP goal 2.00",
		"bpf1 / kp1: 1.28 [1.22-1.33]x (median of the rounds)",
		"bpf2 / kp2: 1.69 [1.50-1.88]x (median of the rounds)",
		"xdp2 / kp2: 2.38x (median of the rounds)",
		"bpf2: the eBPF program forwarded (redirect) 99.5 [99.0-100.0]% of the packets delivered",
		"xdp2: the eBPF program forwarded (xdp-redirect) 100.0% of the packets delivered",
		"bpf2 / kernel forwarding: 1.20x (client-bound) (goal 1.3x); bpf2 / kernel path: 1.50x",
		"xdp2: lost packets already at 20 kpps offered",
		"k2: 3.50 [3.00-4.00] us (2 profiles)",
		"kp2: 3.50 us (1 profiles): 0.86x (the kernel path's goal 0.95)",
		"bpf2: 2.25 [2.00-2.50] us (2 profiles): 1.55 [1.50-1.60]x (the eBPF datapath's goal 1.30)",
		"bpf2: 0.5 [0.0-1.0]% (2 profiles); sllbrd's eBPF program's own code (bpf_prog_*_sllbrd_*) 5.0 [4.0-6.0]%",
		"bpf2 1.9 [1.5-2.4] 1.35 [1.20-1.50] 0.00")
	for _, absent := range []string{"xdp2 / kernel forwarding", "k2: 3.50 [3.00-4.00] us (2 profiles):"} {
		if strings.Contains(text, absent) {
			t.Errorf("report has %q:\n%s", absent, out)
		}
	}
}

// writeReport writes r and returns its text with every run of white space
// made one space (text), and as written (out).
func writeReport(r *report) (text, out string) {
	var b bytes.Buffer
	r.write(&b)
	return strings.Join(strings.Fields(b.String()), " "), b.String()
}

// wantAll fails t for every string of wants that text lacks.
func wantAll(t *testing.T, text, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestWriteRigCost: the rig's cost per packet sent is taken off forwarding's
// and each setup's machine CPU per packet received, round by round, before
// they are divided.
func TestWriteRigCost(t *testing.T) {
	ss := lbSetups(2, 2)
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	// 1000 packets each: forwarding 5 us, the kernel path 6, bpf 3.5, XDP
	// 2.5 per packet; the rig 2 per packet sent (1000 sent, 900 counted).
	at := func(perPacketUS float64) sample {
		return sample{blast: blastAt(1000, 1000), machine: time.Duration(perPacketUS * 1000 * float64(time.Microsecond))}
	}
	r := &report{setups: ss, samples: map[string][]sample{
		ss[0].name: {at(5)}, ss[1].name: {at(6)}, ss[2].name: {at(3.5)}, ss[3].name: {at(2.5)}},
		rigCost: []sample{{blast: blastAt(1000, 900), machine: us(2000)}}}
	var b bytes.Buffer
	r.writeRigCost(&b)
	for _, want := range []string{"2.00 us of machine CPU per packet sent",
		ss[1].name + ": 0.75x", ss[2].name + ": 2.00x", ss[3].name + ": 6.00x (the eBPF datapath's at XDP goal 2.00)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
	var none bytes.Buffer
	(&report{setups: ss, samples: r.samples}).writeRigCost(&none)
	if none.Len() != 0 {
		t.Errorf("without rig cost samples: %q, want nothing", none.String())
	}
}
