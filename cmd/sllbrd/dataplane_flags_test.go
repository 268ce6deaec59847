package main

import (
	"strings"
	"testing"
)

func TestDataplaneFlags(t *testing.T) {
	c, err := parseFlags([]string{"--gateway", "g"})
	if err != nil || c.dataplane != dataplaneKernel || c.onExit != onExitRemove {
		t.Fatalf("defaults: %+v, %v; want --dataplane %s --on-exit %s", c, err, dataplaneKernel, onExitRemove)
	}
	c, err = parseFlags([]string{"--gateway", "g", "--dataplane", "nfqueue", "--on-exit", "keep"})
	if err != nil || c.dataplane != dataplaneNFQueue || c.onExit != onExitKeep {
		t.Fatalf("nfqueue, keep: %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"--gateway", "g", "--dataplane", "bpf", "--bpf-xdp", "auto"})
	if err != nil || c.dataplane != dataplaneBPF || c.bpfXDP != "auto" {
		t.Fatalf("bpf, xdp auto: %+v, %v", c, err)
	}
	for _, args := range [][]string{{"--dataplane", "ebpf"}, {"--on-exit", "linger"}, {"--bpf-xdp", "native"}, {"--bpf-xdp", "auto"}} {
		_, err := parseFlags(append([]string{"--gateway", "g"}, args...))
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err %v, want one naming %s", args, err, args[0])
		}
	}
}

func TestMissingBPFCaps(t *testing.T) {
	for _, tc := range []struct {
		capEff string
		want   string
	}{
		{"000001ffffffffff", ""},                    // root
		{"000000c000001000", ""},                    // NET_ADMIN, PERFMON, BPF
		{"0000000000201000", ""},                    // NET_ADMIN, SYS_ADMIN
		{"0000008000003400", "CAP_PERFMON"},         // the deployment's three and BPF
		{"0000000000003400", "CAP_BPF,CAP_PERFMON"}, // the deployment's three
		{"000000c000000000", "CAP_NET_ADMIN"},       // BPF, PERFMON
		{"0000000000000000", "CAP_NET_ADMIN,CAP_BPF,CAP_PERFMON"},
	} {
		got, err := missingBPFCaps("Name:\tsllbrd\nCapInh:\t0000000000000000\nCapEff:\t" + tc.capEff + "\nCapBnd:\t000001ffffffffff\n")
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("CapEff %s: missing %v, %v; want %q", tc.capEff, got, err, tc.want)
		}
	}
	for _, status := range []string{"Name:\tsllbrd\n", "CapEff:\tzz\n"} {
		if _, err := missingBPFCaps(status); err == nil {
			t.Errorf("%q: no error", status)
		}
	}
}
