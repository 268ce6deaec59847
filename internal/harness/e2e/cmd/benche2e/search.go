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
	searchHigh      = 1020e3
	searchSteps     = 7
	lossFreeMax     = 0.001
	searchProbeTime = 2 * time.Second
)

// probe is one paced blast of the search.
type probe struct {
	rate float64 // offered, packets per second
	smp  sample
}

// lossFree reports whether what the probe sent arrived with loss below
// 0.1%.
func (p probe) lossFree() bool { return p.smp.blast.Loss() < lossFreeMax }

// offered reports whether the client could send at least 95% of the rate:
// when it could not (a busy shared machine), the probe says nothing about
// higher rates.
func (p probe) offered() bool { return p.smp.blast.SentPPS() >= 0.95*p.rate }

// searchResult is the highest offered rate found loss-free and the probes.
type searchResult struct {
	setup string
	// best is the highest rate received loss-free (0: not even searchLow
	// was); senderLimited says the client could not offer more.
	best          float64
	senderLimited bool
	probes        []probe
}

// record notes a probe: a loss-free probe raises best to what it
// received; the next probe goes higher only when this one offered its rate
// loss-free.
func (r *searchResult) record(p probe) (higher bool) {
	r.probes = append(r.probes, p)
	if !p.lossFree() {
		return false
	}
	if got := p.smp.blast.ReceivedPPS(); got > r.best {
		r.best, r.senderLimited = got, !p.offered()
	}
	return p.offered()
}

// searchLossFree bisects the offered rate between searchLow and searchHigh
// for the highest one s carries loss-free (one sllbrd instance, or plain
// kernel forwarding).
func (b *bench) searchLossFree(ctx context.Context, s setup) (*searchResult, error) {
	res := &searchResult{setup: s.name}
	if err := b.placeClient(s); err != nil {
		return nil, err
	}
	err := b.with(ctx, s, func(inst *e2e.Instance) error {
		lo, hi := searchLow, searchHigh
		p, err := b.probe(ctx, inst, s, lo)
		if err != nil || !res.record(p) {
			return err
		}
		for range searchSteps {
			mid := (lo + hi) / 2
			p, err := b.probe(ctx, inst, s, mid)
			if err != nil {
				return err
			}
			if res.record(p) {
				lo = mid
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
	smp, err := b.measureInstance(ctx, inst, s, o)
	if err != nil {
		return probe{}, err
	}
	p := probe{rate: rate, smp: smp}
	verdict := "loss-free"
	switch {
	case !p.lossFree():
		verdict = "LOSS"
	case !p.offered():
		verdict = "loss-free, but the client could not offer the rate"
	}
	fmt.Fprintf(b.out, "search   offered %6.1f kpps: %s  -> %s\n", rate/1e3, brief(smp), verdict)
	return p, nil
}
