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
		{[]string{"-rig", "lb"}, true},
		{[]string{"-rig", "path"}, true},
		{[]string{"-rig", "switch"}, false},
	}
	for _, tc := range tests {
		o, err := parseOptions(tc.args, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("parseOptions(%v) error %v, want ok %v", tc.args, err, tc.ok)
		}
		if tc.args == nil && (o.rounds != 3 || o.duration != 4*time.Second || !o.search || !o.profile || o.profileRounds != 3 || o.rig != rigPath) {
			t.Errorf("defaults = %+v", o)
		}
	}
}

const bpfBody = `# HELP sllbrd_bpf_packets_total Packets the eBPF datapath saw.
# TYPE sllbrd_bpf_packets_total counter
sllbrd_bpf_packets_total{action="punt"} 12
sllbrd_bpf_packets_total{action="redirect"} 1.5e+06
sllbrd_bpf_packets_total{action="xdp-redirect"} 0
sllbrd_bpf_bytes_total{action="redirect"} 4.2e+07
sllbrd_bpf_packets_totalx{action="redirect"} 7
`

func TestParseBPF(t *testing.T) {
	got, err := parseBPF(metricsBody + bpfBody)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["punt"] != 12 || got["redirect"] != 1.5e6 || got["xdp-redirect"] != 0 {
		t.Errorf("parseBPF = %v, want punt 12, redirect 1500000, xdp-redirect 0 (bytes and other names left out)", got)
	}
	d := got.minus(bpfCounters{"redirect": 5e5, "mark": 3})
	if d["redirect"] != 1e6 || d["punt"] != 12 {
		t.Errorf("minus = %v", d)
	}
	if s := d.String(); s != "punt 12, redirect 1000000" {
		t.Errorf("String = %q", s)
	}
	for name, body := range map[string]string{
		"not exported": metricsBody,
		"bad value":    bpfBody + "sllbrd_bpf_packets_total{action=\"mark\"} many\n",
		"no action":    bpfBody + "sllbrd_bpf_packets_total{queue=\"0\"} 1\n",
	} {
		if c, err := parseBPF(body); err == nil {
			t.Errorf("%s: parseBPF = %v, want an error", name, c)
		}
	}
}

// TestCheckForwarded: a blast through the eBPF datapath must have been
// forwarded by its program (the XDP program's action with xdpArgs), about
// every packet delivered and not more than were sent; other setups are
// not asked.
func TestCheckForwarded(t *testing.T) {
	tc := setup{name: "bpf", dataplane: dataplaneBPF}
	xdp := setup{name: "bpf xdp", dataplane: dataplaneBPF, xdpArgs: []string{"--some-xdp-flag"}}
	kp := setup{name: "kp", dataplane: dataplaneKernel}
	smp := func(sent, recv uint64, c bpfCounters) sample { return sample{blast: blastAt(sent, recv), bpf: c} }
	tests := []struct {
		name string
		s    setup
		smp  sample
		ok   bool
	}{
		{"all redirected", tc, smp(1000, 1000, bpfCounters{"redirect": 1000}), true},
		{"lost after the redirect", tc, smp(1000, 900, bpfCounters{"redirect": 1000}), true},
		{"1% punted", tc, smp(1000, 1000, bpfCounters{"redirect": 990, "punt": 10}), true},
		{"punted to the kernel path", tc, smp(1000, 1000, bpfCounters{"redirect": 500, "punt": 500}), false},
		{"marked: no next hop", tc, smp(1000, 1000, bpfCounters{"mark": 1000}), false},
		{"nothing counted", tc, smp(1000, 1000, bpfCounters{}), false},
		{"counted twice", tc, smp(1000, 1000, bpfCounters{"redirect": 2000}), false},
		{"tc redirects in the XDP setup", xdp, smp(1000, 1000, bpfCounters{"redirect": 1000}), false},
		{"XDP redirects", xdp, smp(1000, 1000, bpfCounters{"xdp-redirect": 995, "redirect": 5}), true},
		{"kernel path", kp, smp(1000, 1000, nil), true},
	}
	for _, tc := range tests {
		err := tc.s.checkForwarded(tc.smp)
		if (err == nil) != tc.ok {
			t.Errorf("%s: checkForwarded = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	if got := xdp.forwardedShare(smp(1000, 500, bpfCounters{"xdp-redirect": 450})); got != 0.9 {
		t.Errorf("forwardedShare = %v, want 0.9", got)
	}
}

// TestProgramShare counts sllbrd's JITed programs and no other program
// or helper.
func TestProgramShare(t *testing.T) {
	profile := parsePerfReport(`     3.00%  [k] bpf_prog_6deef7357e7b4530_sllbrd_ingress
     1.00%  [k] bpf_prog_1a2b3c4d5e6f7a8b_sllbrd_xdp
     2.00%  [k] bpf_prog_0123456789abcdef_sd_fw_ingress
     1.50%  [k] bpf_redirect_neigh
`)
	if got := programShare(profile); got != 4 {
		t.Errorf("programShare = %v, want 4", got)
	}
}
