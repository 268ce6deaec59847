package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
)

// profileResult is a flat, system-wide perf profile of one setup under an
// unbounded blast, restricted to the packet path's tasks (pathComms: the
// client's senders, whose system calls and softirqs forward the packets,
// the softirq threads, and sllbrd): the CPU time they took per received
// datagram and the share of their samples per symbol. The machine is
// shared, so other tasks' samples are left out.
type profileResult struct {
	setup      string
	kind       setupKind
	round      int    // 1, 2, ...: the setups are profiled in turn
	note       string // why there is no profile
	perPacket  time.Duration
	bySym      []share // the largest first, down to symbolLimit
	datagrams  uint64
	pathSample uint64
}

type share struct {
	percent float64
	what    string
}

// Profile bounds: perf's sampling frequency, the symbols reported and the
// smallest share of a symbol kept (for decisionShare).
const (
	perfFrequency = 1999
	topSymbols    = 20
	symbolLimit   = 0.01
)

// pathComms are the command names of the packet path's tasks.
var pathComms = []string{"benche2e", "ksoftirqd/0", "ksoftirqd/1", "ksoftirqd/2", "ksoftirqd/3", "sllbrd"}

// profiles profiles every setup of ss, in turn, rounds times.
func (b *bench) profiles(ctx context.Context, ss []setup, rounds int) []*profileResult {
	var out []*profileResult
	for round := 1; round <= rounds; round++ {
		for _, s := range ss {
			p := b.profile(ctx, s)
			p.round = round
			out = append(out, p)
		}
	}
	return out
}

// profile records every CPU with perf during one blast through s. A
// failure is not fatal: the result says what went wrong.
func (b *bench) profile(ctx context.Context, s setup) *profileResult {
	res := &profileResult{setup: s.name, kind: s.kind()}
	fail := func(note string) *profileResult {
		res.note = note
		return res
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		return fail("perf not installed (apt-get install linux-perf)")
	}
	data := filepath.Join(b.manifests, "perf.data")
	defer os.Remove(data)
	if err := b.placeClient(s); err != nil {
		return fail(err.Error())
	}
	err = b.with(ctx, s, func(inst *e2e.Instance) error {
		secs := strconv.FormatFloat(b.o.duration.Seconds()-0.5, 'f', 1, 64)
		rec := exec.CommandContext(ctx, perf, "record", "-q", "-a", "-F", strconv.Itoa(perfFrequency), "-o", data, "--", "sleep", secs)
		if err := rec.Start(); err != nil {
			return fmt.Errorf("perf record: %w", err)
		}
		time.Sleep(200 * time.Millisecond) // perf attaches
		smp, err := b.measureInstance(ctx, inst, s, b.blastOptions(s, 0))
		if werr := rec.Wait(); err == nil && werr != nil {
			err = fmt.Errorf("perf record: %w", werr)
		}
		if smp.blast.Elapsed > 0 { // the datagrams received while perf recorded
			res.datagrams = uint64(float64(smp.blast.Received) * secsOf(secs) / smp.blast.Elapsed.Seconds())
		}
		fmt.Fprintf(b.out, "profile  %-28s %s\n", s.name, brief(smp))
		return err
	})
	if err != nil {
		return fail(err.Error())
	}
	byComm, err := perfReport(ctx, perf, data, "comm", 0.5, "-n")
	if err != nil {
		return fail(err.Error())
	}
	res.pathSample = pathSamples(byComm)
	if res.datagrams > 0 {
		res.perPacket = time.Duration(float64(res.pathSample) / perfFrequency * 1e9 / float64(res.datagrams))
	}
	if res.bySym, err = perfReport(ctx, perf, data, "sym", symbolLimit, "--comms", strings.Join(pathComms, ","), "--percentage", "relative"); err != nil {
		return fail(err.Error())
	}
	return res
}

func secsOf(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// pathSamples sums the samples of the packet path's tasks in a
// "perf report -n --sort comm" profile (what holds the sample count).
func pathSamples(byComm []share) uint64 {
	var n uint64
	for _, s := range byComm {
		f := strings.Fields(s.what)
		if len(f) == 2 && isPathComm(f[1]) {
			v, _ := strconv.ParseUint(f[0], 10, 64)
			n += v
		}
	}
	return n
}

func isPathComm(c string) bool {
	for _, p := range pathComms {
		if c == p || (strings.HasPrefix(p, "ksoftirqd/") && strings.HasPrefix(c, "ksoftirqd/")) {
			return true
		}
	}
	return false
}

// perfReport returns the flat profile sorted by keys, largest first, down
// to limit percent.
func perfReport(ctx context.Context, perf, data, keys string, limit float64, extra ...string) ([]share, error) {
	args := append([]string{"report", "-i", data, "--stdio", "--no-children", "--sort", keys,
		"--percent-limit", strconv.FormatFloat(limit, 'f', -1, 64)}, extra...)
	out, err := exec.CommandContext(ctx, perf, args...).Output()
	if err != nil {
		return nil, fmt.Errorf("perf report --sort %s: %w", keys, err)
	}
	return parsePerfReport(string(out)), nil
}

// parsePerfReport reads the "  12.34%  what" lines of perf report --stdio.
func parsePerfReport(out string) []share {
	var shares []share
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimSpace(line)
		pct, rest, ok := strings.Cut(line, "%")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil {
			continue
		}
		shares = append(shares, share{percent: v, what: strings.Join(strings.Fields(rest), " ")})
	}
	return shares
}

// decisionShare is the percentage of a flat kernel profile's samples in
// the decision the kernel path adds to forwarding: netfilter's hooks,
// nf_tables with its expressions and sets, the jhash, and policy
// routing's walk of the rules. Plain forwarding has some of it too (the
// lab's own hooks, the rules local and main).
func decisionShare(bySym []share) float64 {
	var pct float64
	for _, s := range decisionSymbols(bySym) {
		pct += s.percent
	}
	return pct
}

// decisionSymbols are the shares of decisionShare's symbols, without
// perf's "[k]", the largest first.
func decisionSymbols(bySym []share) []share {
	var out []share
	for _, s := range bySym {
		if sym := strings.TrimPrefix(s.what, "[k] "); decisionSymbol(sym) {
			out = append(out, share{percent: s.percent, what: sym})
		}
	}
	return out
}

// decisionPrefixes are the names of decisionShare's kernel functions.
var decisionPrefixes = []string{"nft_", "__nft_", "nf_", "__nf_", "jhash", "fib_rules_", "fib_rule_", "fib4_rule_", "fib6_rule_"}

func decisionSymbol(sym string) bool {
	for _, p := range decisionPrefixes {
		if strings.HasPrefix(sym, p) {
			return true
		}
	}
	return false
}

// estimatedRatio is the share of forwarding's rate that a setup whose
// profile spends decision percent of its samples on the decision would
// reach if the rest of its work per packet cost what forwarding's does
// (which spends forwarding percent there) and that work bounded the rate:
// a packet costs rest/(1-decision), so the ratio is
// (1-decision)/(1-forwarding). An estimate from one profile each, far
// less noisy on a shared machine than the rates, not a measurement.
func estimatedRatio(decision, forwarding float64) float64 {
	return (100 - decision) / (100 - forwarding)
}
