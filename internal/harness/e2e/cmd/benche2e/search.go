package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
)

// Loss-free search bounds: offered rates in packets per second, the loss
// that still counts as loss-free, and the length of one probe blast.
const (
	searchLow       = 20e3
	searchHigh      = 420e3
	searchSteps     = 6
	lossFreeMax     = 0.001
	searchProbeTime = 2 * time.Second
)

// probe is one paced blast of the search.
type probe struct {
	rate float64 // offered, packets per second
	smp  sample
}

// lossFree reports whether the probe carried its rate with loss below
// 0.1%; a client that could not even offer 95% of the rate fails it too.
func (p probe) lossFree() bool {
	return p.smp.blast.Loss() < lossFreeMax && p.smp.blast.SentPPS() >= 0.95*p.rate
}

// searchResult is the highest offered rate found loss-free and the probes.
type searchResult struct {
	setup  string
	best   float64 // 0: not even searchLow was loss-free
	probes []probe
}

// searchLossFree bisects the offered rate between searchLow and searchHigh
// for the highest one s carries loss-free, with one sllbrd instance.
func (b *bench) searchLossFree(ctx context.Context, s setup) (*searchResult, error) {
	res := &searchResult{setup: s.name}
	if err := b.placeClient(s); err != nil {
		return nil, err
	}
	err := b.withSllbrd(ctx, s, func(inst *e2e.Instance) error {
		lo, hi := searchLow, searchHigh
		p, err := b.probe(ctx, inst, s, lo)
		if err != nil {
			return err
		}
		res.probes = append(res.probes, p)
		if !p.lossFree() {
			return nil
		}
		res.best = lo
		for range searchSteps {
			mid := (lo + hi) / 2
			p, err := b.probe(ctx, inst, s, mid)
			if err != nil {
				return err
			}
			res.probes = append(res.probes, p)
			if p.lossFree() {
				lo, res.best = mid, mid
			} else {
				hi = mid
			}
		}
		return nil
	})
	return res, err
}

func (b *bench) probe(ctx context.Context, inst *e2e.Instance, s setup, rate float64) (probe, error) {
	o := b.blastOptions(s, rate)
	o.Duration = searchProbeTime
	smp, err := b.measureInstance(ctx, inst, o)
	if err != nil {
		return probe{}, err
	}
	p := probe{rate: rate, smp: smp}
	verdict := "loss-free"
	if !p.lossFree() {
		verdict = "LOSS"
	}
	fmt.Fprintf(b.out, "search   offered %6.1f kpps: %s  -> %s\n", rate/1e3, brief(smp), verdict)
	return p, nil
}
