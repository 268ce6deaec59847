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

// profileResult is a flat perf profile of sllbrd under an unbounded blast:
// the share of its samples per binary (kernel or sllbrd) and per symbol.
type profileResult struct {
	setup string
	note  string // why there is no profile
	byDSO []share
	bySym []share
}

type share struct {
	percent float64
	what    string
}

// Profile bounds: perf's sampling frequency and the symbols reported.
const (
	perfFrequency = "1999"
	topSymbols    = 25
)

// profile records sllbrd (set up as s) with perf during one blast. A
// failure is not fatal: the result says what went wrong.
func (b *bench) profile(ctx context.Context, s setup) *profileResult {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return &profileResult{note: "perf not installed"}
	}
	data := filepath.Join(b.manifests, "perf.data")
	res := &profileResult{setup: s.name}
	if err := b.placeClient(s); err != nil {
		return &profileResult{note: err.Error()}
	}
	err = b.withSllbrd(ctx, s, func(inst *e2e.Instance) error {
		secs := strconv.FormatFloat(b.o.duration.Seconds()-0.5, 'f', 1, 64)
		rec := exec.CommandContext(ctx, perf, "record", "-q", "-F", perfFrequency, "-o", data,
			"-p", strconv.Itoa(inst.Proc.PID), "--", "sleep", secs)
		if err := rec.Start(); err != nil {
			return fmt.Errorf("perf record: %w", err)
		}
		time.Sleep(200 * time.Millisecond) // perf attaches
		smp, err := b.measureInstance(ctx, inst, b.blastOptions(s, 0))
		if werr := rec.Wait(); err == nil && werr != nil {
			err = fmt.Errorf("perf record: %w", werr)
		}
		fmt.Fprintf(b.out, "profile  %-28s %s\n", s.name, brief(smp))
		return err
	})
	if err != nil {
		return &profileResult{note: err.Error()}
	}
	if res.byDSO, err = perfReport(ctx, perf, data, "dso"); err != nil {
		return &profileResult{note: err.Error()}
	}
	if res.bySym, err = perfReport(ctx, perf, data, "dso,sym"); err != nil {
		return &profileResult{note: err.Error()}
	}
	os.Remove(data)
	return res
}

// perfReport returns the flat profile sorted by keys, largest first.
func perfReport(ctx context.Context, perf, data, keys string) ([]share, error) {
	out, err := exec.CommandContext(ctx, perf, "report", "-i", data, "--stdio", "--no-children",
		"--sort", keys, "--percent-limit", "0.5").Output()
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
