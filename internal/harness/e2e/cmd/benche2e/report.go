package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// NFQLB's measurements in the same kind of lab (see FIELD-NOTES.md): its
// rate as a fraction of plain kernel forwarding, its loss-free rate, its
// CPU time per packet and its RSS.
const (
	nfqlbRatio        = 0.49
	nfqlbLossFreeKpps = 125
	nfqlbCPUMicros    = 7
	nfqlbRSSMB        = 2.3
)

// report collects a run's samples and prints them.
type report struct {
	env      string
	setups   []setup
	samples  map[string][]sample // by setup name, one per round
	lossFree *searchResult
	profile  *profileResult
	elapsed  time.Duration
}

// spread is the median and range of a few measurements.
type spread struct{ median, min, max float64 }

// summarize returns the median (the mean of the middle two for an even
// count) and the range of xs; zero for none.
func summarize(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{median: m, min: s[0], max: s[len(s)-1]}
}

// format prints the median and, when the values differ, their range.
func (s spread) format(scale float64, prec int) string {
	m := fmt.Sprintf("%.*f", prec, s.median*scale)
	if s.min == s.max {
		return m
	}
	return fmt.Sprintf("%s [%.*f-%.*f]", m, prec, s.min*scale, prec, s.max*scale)
}

// column summarizes one value of every sample of a setup.
func column(ss []sample, value func(sample) float64) spread {
	xs := make([]float64, len(ss))
	for i, s := range ss {
		xs[i] = value(s)
	}
	return summarize(xs)
}

// ratios are each round's received rate of s over its kernel forwarding
// reference's in the same round.
func (r *report) ratios(s setup) spread {
	kernel, other := r.samples[r.setups[s.reference].name], r.samples[s.name]
	var xs []float64
	for i := range min(len(kernel), len(other)) {
		if k := kernel[i].blast.ReceivedPPS(); k > 0 {
			xs = append(xs, other[i].blast.ReceivedPPS()/k)
		}
	}
	return summarize(xs)
}

func (r *report) write(w io.Writer) {
	fmt.Fprintf(w, "\nsllbrd end-to-end benchmark (%s), took %v\n", r.env, r.elapsed.Round(time.Second))
	fmt.Fprintln(w, "median [min-max] over the rounds; ratio = sllbrd / kernel forwarding of the same round")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "setup\treceived kpps\tratio\tloss %\tCPU us/pkt\tuser/sys\tpkts/batch\tRSS MB\tkernel drops")
	for _, s := range r.setups {
		r.writeRow(tw, s)
	}
	fmt.Fprintf(tw, "NFQLB (field notes)\t-\t%.2f\t-\t%d\tabout 8/92\t1\t%.1f\t-\n", nfqlbRatio, nfqlbCPUMicros, nfqlbRSSMB)
	tw.Flush()
	r.writeVerdict(w)
	r.writeLossFree(w)
	r.writeProfile(w)
}

func (r *report) writeRow(tw io.Writer, s setup) {
	ss := r.samples[s.name]
	recv := column(ss, func(x sample) float64 { return x.blast.ReceivedPPS() })
	loss := column(ss, func(x sample) float64 { return x.blast.Loss() })
	if s.kernel() {
		fmt.Fprintf(tw, "%s\t%s\t1\t%s\t-\t-\t-\t-\t-\n", s.name, recv.format(1e-3, 1), loss.format(100, 2))
		return
	}
	cpu := column(ss, func(x sample) float64 { return float64(x.cpuPerPacket().Nanoseconds()) })
	user := column(ss, func(x sample) float64 { return fraction(x.cpu.User, x.cpu.CPU()) })
	batch := column(ss, func(x sample) float64 { return x.nfq.perBatch() })
	rss := column(ss, func(x sample) float64 { return float64(x.cpu.RSS) })
	drops := column(ss, func(x sample) float64 { return x.nfq.kernelDropped + x.nfq.userDropped })
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.0f/%.0f\t%s\t%s\t%s\n", s.name, recv.format(1e-3, 1),
		r.ratios(s).format(1, 2), loss.format(100, 2), cpu.format(1e-3, 2),
		100*user.median, 100-100*user.median, batch.format(1, 1), rss.format(1.0/(1<<20), 1), drops.format(1, 0))
}

func fraction(part, whole time.Duration) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// writeVerdict compares each sllbrd setup's ratio with NFQLB's.
func (r *report) writeVerdict(w io.Writer) {
	fmt.Fprintln(w)
	for _, s := range r.setups {
		if s.kernel() {
			continue
		}
		q := r.ratios(s)
		verdict := "meets"
		if q.median < nfqlbRatio {
			verdict = "DOES NOT MEET"
		}
		fmt.Fprintf(w, "%s: %.2f of %s (median): %s the target, NFQLB's %.2f\n",
			s.name, q.median, r.setups[s.reference].name, verdict, nfqlbRatio)
	}
}

func (r *report) writeLossFree(w io.Writer) {
	if r.lossFree == nil {
		return
	}
	f := r.lossFree
	if f.best == 0 {
		fmt.Fprintf(w, "loss-free (<%.1f%% loss, %v probes): %s lost packets already at %.0f kpps offered\n",
			100*lossFreeMax, searchProbeTime, f.setup, searchLow/1e3)
		return
	}
	fmt.Fprintf(w, "loss-free (<%.1f%% loss, %v probes): %s carries %.0f kpps offered (NFQLB: about %d kpps)\n",
		100*lossFreeMax, searchProbeTime, f.setup, f.best/1e3, nfqlbLossFreeKpps)
}

func (r *report) writeProfile(w io.Writer) {
	p := r.profile
	if p == nil {
		return
	}
	if p.note != "" {
		fmt.Fprintf(w, "profile: none (%s)\n", p.note)
		return
	}
	var dsos []string
	for _, s := range p.byDSO {
		dsos = append(dsos, fmt.Sprintf("%s %.1f%%", s.what, s.percent))
	}
	fmt.Fprintf(w, "\nprofile of %s (perf record, unbounded blast) by binary: %s\n", p.setup, strings.Join(dsos, ", "))
	for i, s := range p.bySym {
		if i == topSymbols {
			break
		}
		fmt.Fprintf(w, "  %5.1f%%  %s\n", s.percent, s.what)
	}
}
