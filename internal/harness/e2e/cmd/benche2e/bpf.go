package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
)

// Goals of the eBPF datapath, as ratios to plain kernel forwarding in the
// same run, unpinned: the tc program, and the program at XDP too (a setup
// with xdpArgs).
const (
	bpfOfForwarding    = 1.3
	bpfXDPOfForwarding = 2.0
)

// bpfMetric counts what the eBPF datapath did with the packets it saw, by
// action (label "action": punt, redirect, mark, too-big, xdp-redirect, ...).
const bpfMetric = "sllbrd_bpf_packets_total"

// Actions of bpfMetric that mean the program forwarded the packet itself:
// the tc program's bpf_redirect_neigh, and the XDP program's redirect.
const (
	actionRedirect    = "redirect"
	actionXDPRedirect = "xdp-redirect"
)

// forwardedMin is the least share of the packets delivered to the targets
// that the program must have forwarded itself in a measurement of an eBPF
// setup: below it, part of the blast took another path (the nftables
// rules after a punt, policy routing after a mark) and the measurement is
// not of the datapath it is named after.
const forwardedMin = 0.99

// bpfCounters are sllbrd's sllbrd_bpf_packets_total, by action.
type bpfCounters map[string]float64

// readBPF reads the eBPF datapath's counters from one scrape of the
// instance's /metrics.
func readBPF(inst *e2e.Instance) (bpfCounters, error) {
	status, body, err := inst.Get("/metrics")
	if err != nil {
		return nil, fmt.Errorf("metrics of sllbrd in %s: %w", inst.Node, err)
	}
	if status != 200 {
		return nil, fmt.Errorf("metrics of sllbrd in %s: HTTP %d", inst.Node, status)
	}
	return parseBPF(body)
}

// parseBPF reads every action of bpfMetric in a Prometheus text body; the
// metric must be exported (sllbrd exports it once its eBPF datapath is
// configured).
func parseBPF(body string) (bpfCounters, error) {
	c := bpfCounters{}
	for line := range strings.SplitSeq(body, "\n") {
		rest, ok := strings.CutPrefix(line, bpfMetric+"{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "}")
		_, action, ok := strings.Cut(labels, `action="`)
		if !ok {
			return nil, fmt.Errorf("metric line %q: no action", line)
		}
		action, _, _ = strings.Cut(action, `"`)
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		c[action] += v
	}
	if len(c) == 0 {
		return nil, fmt.Errorf("metric %s: not exported (is the eBPF datapath configured?)", bpfMetric)
	}
	return c, nil
}

// minus is c - d, action by action.
func (c bpfCounters) minus(d bpfCounters) bpfCounters {
	out := bpfCounters{}
	for a, v := range c {
		out[a] = v - d[a]
	}
	return out
}

// String lists the actions with packets, for error messages.
func (c bpfCounters) String() string {
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(c)) {
		if c[a] != 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", a, c[a]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// forwardAction is the action of bpfMetric that counts the packets s's
// program forwards: the XDP program's with xdpArgs, the tc program's
// otherwise.
func (s setup) forwardAction() string {
	if s.xdp() {
		return actionXDPRedirect
	}
	return actionRedirect
}

// checkForwarded fails a sample of an eBPF setup in which the program did
// not forward (s.forwardAction) about every packet the targets received:
// at least forwardedMin of them, and not more than the client sent (by
// more than that margin).
// Other setups pass.
func (s setup) checkForwarded(smp sample) error {
	if s.kind() != kindBPF {
		return nil
	}
	action, recv, sent := s.forwardAction(), float64(smp.blast.Received), float64(smp.blast.Sent)
	got := smp.bpf[action]
	switch {
	case got < forwardedMin*recv:
		return fmt.Errorf("the eBPF datapath forwarded (%s) %.0f packets of the %.0f delivered, fewer than %.0f%%: "+
			"the rest took another path, so this does not measure it (its actions during the blast: %v)",
			action, got, recv, 100*forwardedMin, smp.bpf)
	case got > sent/forwardedMin:
		return fmt.Errorf("the eBPF datapath forwarded (%s) %.0f packets, more than the %.0f the client sent: "+
			"its counters count other traffic or count twice (its actions during the blast: %v)", action, got, sent, smp.bpf)
	}
	return nil
}

// forwardedShare is the packets s's program forwarded per packet the
// targets received (0 without any).
func (s setup) forwardedShare(smp sample) float64 {
	if smp.blast.Received == 0 {
		return 0
	}
	return smp.bpf[s.forwardAction()] / float64(smp.blast.Received)
}

// programSymbol reports whether a kernel symbol is sllbrd's eBPF program
// (JITed programs are named bpf_prog_<tag>_<function>: sllbrd_ingress,
// sllbrd_xdp).
func programSymbol(sym string) bool {
	return strings.HasPrefix(sym, "bpf_prog_") && strings.Contains(sym, "_sllbrd_")
}

// programShare is the percentage of a flat kernel profile's samples in
// sllbrd's eBPF programs' own code (not the helpers they call).
func programShare(bySym []share) float64 {
	var pct float64
	for _, s := range bySym {
		if programSymbol(strings.TrimPrefix(s.what, "[k] ")) {
			pct += s.percent
		}
	}
	return pct
}
