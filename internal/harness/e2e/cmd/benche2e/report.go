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
// rate as a fraction of plain kernel forwarding with the LB on its own
// core (pinned) and with everything sharing both cores (unpinned, measured
// in the same run as sllbrd: 135 of 552 kpps), its loss-free rate, its CPU
// time per packet and its RSS.
const (
	nfqlbRatio         = 0.49
	nfqlbRatioUnpinned = 0.24
	nfqlbLossFreeKpps  = 125
	nfqlbCPUMicros     = 7
	nfqlbRSSMB         = 2.3
)

// report collects a run's samples and prints them.
type report struct {
	env      string
	setups   []setup
	samples  map[string][]sample // by setup name, one per round
	lossFree []*searchResult
	rigCost  []sample // rigLB: the rig's own cost, a sample per round (lb.go)
	profiles []*profileResult
	elapsed  time.Duration
}

// Goals of the kernel path (issue 12), as ratios in the same run.
const (
	kernelPathOfForwarding = 0.95 // of plain kernel forwarding, both placements
	kernelPathOfNFQueue    = 2.0  // of the nfqueue dataplane, unpinned
)

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
func (r *report) ratios(s setup) spread { return r.ratiosTo(s, r.setups[s.reference]) }

// ratiosTo are each round's received rate of s over ref's in that round.
func (r *report) ratiosTo(s, ref setup) spread {
	base, other := r.samples[ref.name], r.samples[s.name]
	var xs []float64
	for i := range min(len(base), len(other)) {
		if k := base[i].blast.ReceivedPPS(); k > 0 {
			xs = append(xs, other[i].blast.ReceivedPPS()/k)
		}
	}
	return summarize(xs)
}

func (r *report) write(w io.Writer) {
	fmt.Fprintf(w, "\nsllbrd end-to-end benchmark (%s), took %v\n", r.env, r.elapsed.Round(time.Second))
	fmt.Fprintln(w, "median [min-max] over the rounds; ratio = sllbrd / kernel forwarding of the same round")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "setup\treceived kpps\tratio\tloss %\tmachine CPU us/pkt\tsllbrd CPU us/pkt\tuser/sys\tpkts/batch\tRSS MB\tkernel drops")
	for _, s := range r.setups {
		r.writeRow(tw, s)
	}
	fmt.Fprintf(tw, "NFQLB (field notes)\t-\t%.2f pinned, %.2f unpinned\t-\t-\t%d\tabout 8/92\t1\t%.1f\t-\n",
		nfqlbRatio, nfqlbRatioUnpinned, nfqlbCPUMicros, nfqlbRSSMB)
	tw.Flush()
	r.writeVerdict(w)
	r.writeRigCost(w)
	r.writeLossFree(w)
	for _, p := range r.profiles {
		if p.round <= 1 {
			p.write(w)
		}
	}
	r.writeCPUPerPacket(w)
	r.writeDecisionShares(w)
}

// profilesBySetup groups the profiles that have one (no note) by setup,
// in the order of their first profile.
func (r *report) profilesBySetup() (order []string, by map[string][]*profileResult) {
	by = map[string][]*profileResult{}
	for _, p := range r.profiles {
		if p.note != "" {
			continue
		}
		if by[p.setup] == nil {
			order = append(order, p.setup)
		}
		by[p.setup] = append(by[p.setup], p)
	}
	return order, by
}

// forwardingProfiles returns forwarding's profiles by round, and its
// setup's name.
func (r *report) forwardingProfiles() (map[int]*profileResult, string) {
	base, name := map[int]*profileResult{}, ""
	for _, p := range r.profiles {
		if p.kind == kindForwarding && p.note == "" {
			base[p.round], name = p, p.setup
		}
	}
	return base, name
}

// writeDecisionShares prints, per profiled setup, the spread of its
// profiles' decisionShare and, for the kernel path and the floor, of the
// ratios they imply against forwarding's profile of the same round
// (estimatedRatio), for the eBPF datapath its program's share
// (programShare), with the first profile's decision symbols.
func (r *report) writeDecisionShares(w io.Writer) {
	base, fwd := r.forwardingProfiles()
	if len(base) == 0 {
		return
	}
	fmt.Fprintf(w, "\nthe decision's share of the packet path's samples (netfilter, nf_tables, jhash, policy rules; %s), median [min-max] of the profiles:\n",
		strings.Join(decisionPrefixes, " "))
	order, by := r.profilesBySetup()
	for _, name := range order {
		ps := by[name]
		var share, estimate, program []float64
		for _, p := range ps {
			d := decisionShare(p.bySym)
			share = append(share, d)
			if b, ok := base[p.round]; ok && (p.kind == kindKernelPath || p.kind == kindFloor) {
				estimate = append(estimate, estimatedRatio(d, decisionShare(b.bySym)))
			}
			if p.kind == kindBPF {
				program = append(program, programShare(p.bySym))
			}
		}
		line := fmt.Sprintf("  %s: %s%% (%d profiles)", name, summarize(share).format(1, 1), len(share))
		if len(estimate) > 0 {
			line += fmt.Sprintf(": %s of %s if the rest of a packet's work cost the same (estimate; goal %.2f)",
				summarize(estimate).format(1, 3), fwd, kernelPathOfForwarding)
		}
		if len(program) > 0 {
			line += fmt.Sprintf("; sllbrd's eBPF program's own code (bpf_prog_*_sllbrd_*) %s%%", summarize(program).format(1, 1))
		}
		fmt.Fprintln(w, line)
		var parts []string
		for _, s := range decisionSymbols(ps[0].bySym) {
			if s.percent >= decisionDetail {
				parts = append(parts, fmt.Sprintf("%s %.2f", s.what, s.percent))
			}
		}
		fmt.Fprintf(w, "    first profile: %s\n", strings.Join(parts, ", "))
	}
}

// writeCPUPerPacket prints, per profiled setup, the spread of its
// profiles' CPU time per received datagram (the packet path's tasks) and,
// for the others, forwarding's over it in the same round: the ratio to
// forwarding that this cost implies where CPU bounds the rate, with the
// setup's goal (goal) when it has one (an estimate: no verdict).
func (r *report) writeCPUPerPacket(w io.Writer) {
	base, fwd := r.forwardingProfiles()
	order, by := r.profilesBySetup()
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(w, "\nCPU per received datagram of the packet path's tasks (perf), median [min-max] of the profiles; x: that of %s over it, in the same round: the ratio to forwarding it implies where CPU bounds the rate:\n", fwd)
	for _, name := range order {
		var us, implied []float64
		kind := by[name][0].kind
		for _, p := range by[name] {
			if p.perPacket <= 0 {
				continue
			}
			us = append(us, float64(p.perPacket.Nanoseconds())/1e3)
			if b, ok := base[p.round]; ok && b.perPacket > 0 && kind != kindForwarding {
				implied = append(implied, float64(b.perPacket)/float64(p.perPacket))
			}
		}
		if len(us) == 0 {
			continue
		}
		line := fmt.Sprintf("  %s: %s us (%d profiles)", name, summarize(us).format(1, 2), len(us))
		if len(implied) > 0 {
			q := summarize(implied)
			line += fmt.Sprintf(": %sx", q.format(1, 2))
			if s, ok := r.setupNamed(name); ok {
				if want, what, ok := goal(s); ok {
					line += fmt.Sprintf(" (%s goal %.2f)", what, want)
				}
			}
		}
		fmt.Fprintln(w, line)
	}
}

// setupNamed is the setup called name.
func (r *report) setupNamed(name string) (setup, bool) {
	for _, s := range r.setups {
		if s.name == name {
			return s, true
		}
	}
	return setup{}, false
}

// decisionDetail is the smallest share of a decision symbol listed.
const decisionDetail = 0.1

func (r *report) writeRow(tw io.Writer, s setup) {
	ss := r.samples[s.name]
	recv := column(ss, func(x sample) float64 { return x.blast.ReceivedPPS() })
	loss := column(ss, func(x sample) float64 { return x.blast.Loss() })
	machine := column(ss, func(x sample) float64 { return float64(perPacket(x.machine, x.blast.Received).Nanoseconds()) })
	if s.kernel() {
		fmt.Fprintf(tw, "%s\t%s\t1\t%s\t%s\t-\t-\t-\t-\t-\n", s.name, recv.format(1e-3, 1), loss.format(100, 2), machine.format(1e-3, 2))
		return
	}
	if s.floor {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\n", s.name, recv.format(1e-3, 1), r.ratios(s).format(1, 2),
			loss.format(100, 2), machine.format(1e-3, 2))
		return
	}
	cpu := column(ss, func(x sample) float64 { return float64(x.cpuPerPacket().Nanoseconds()) })
	user := column(ss, func(x sample) float64 { return fraction(x.cpu.User, x.cpu.CPU()) })
	batch := column(ss, func(x sample) float64 { return x.nfq.perBatch() })
	rss := column(ss, func(x sample) float64 { return float64(x.cpu.RSS) })
	drops := column(ss, func(x sample) float64 { return x.nfq.kernelDropped + x.nfq.userDropped })
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f/%.0f\t%s\t%s\t%s\n", s.name, recv.format(1e-3, 1),
		r.ratios(s).format(1, 2), loss.format(100, 2), machine.format(1e-3, 2), cpu.format(1e-3, 2),
		100*user.median, 100-100*user.median, batch.format(1, 1), rss.format(1.0/(1<<20), 1), drops.format(1, 0))
}

// perPacket is d per packet of n (0 for none).
func perPacket(d time.Duration, n uint64) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

func fraction(part, whole time.Duration) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// goal is what s's ratio to kernel forwarding of its placement should
// reach, and whose goal that is: NFQLB's share in the same placement for
// the nfqueue dataplane; 0.95 for the kernel path and the nftables floor
// (which bounds what the kernel path can reach); 1.3 for the eBPF
// datapath unpinned, 2 at XDP. ok is false for the setups held to none:
// kernel forwarding, the mixed case (compared with the pure kernel path:
// its sender, which fragments, sets its rate) and the eBPF datapath pinned
// (its goal is unpinned; pinned, it is reported).
func goal(s setup) (ratio float64, what string, ok bool) {
	switch {
	case s.kernel() || s.fragmentEvery > 0 || (s.kind() == kindBPF && s.pinned):
		return 0, "", false
	case s.floor:
		return kernelPathOfForwarding, "(the least any nftables Maglev ruleset does) the kernel path's", true
	case s.kind() == kindKernelPath:
		return kernelPathOfForwarding, "the kernel path's", true
	case s.xdp():
		return bpfXDPOfForwarding, "the eBPF datapath's at XDP", true
	case s.kind() == kindBPF:
		return bpfOfForwarding, "the eBPF datapath's", true
	case s.pinned:
		return nfqlbRatio, "NFQLB's", true
	}
	return nfqlbRatioUnpinned, "NFQLB's (unpinned)", true
}

// kernelPathOf is the kernel path setup (without fragments) of s's
// placement.
func (r *report) kernelPathOf(s setup) (setup, bool) {
	for _, k := range r.setups {
		if k.kind() == kindKernelPath && k.pinned == s.pinned && k.fragmentEvery == 0 {
			return k, true
		}
	}
	return setup{}, false
}

// writeVerdict compares each sllbrd setup's ratio with its goal, the
// kernel path with the nfqueue dataplane unpinned (at least 2x), the eBPF
// datapath with the kernel path of its placement (and says how much of the
// blast its program forwarded), and the mixed case with the pure kernel
// path.
func (r *report) writeVerdict(w io.Writer) {
	fmt.Fprintln(w)
	for _, s := range r.setups {
		if s.kernel() || s.fragmentEvery > 0 {
			continue
		}
		q, ref := r.ratios(s), r.setups[s.reference].name
		want, what, ok := goal(s)
		if !ok {
			fmt.Fprintf(w, "%s: %s of %s (median): no goal in this placement (reported)\n", s.name, q.format(1, 2), ref)
			continue
		}
		fmt.Fprintf(w, "%s: %s of %s (median): %s %s goal %.2f\n", s.name, q.format(1, 2), ref, meets(q.median >= want), what, want)
	}
	kp, okK := unpinned(r.setups, dataplaneKernel)
	nq, okN := unpinned(r.setups, dataplaneNFQueue)
	if okK && okN {
		q := r.ratiosTo(kp, nq)
		fmt.Fprintf(w, "%s / %s: %sx (median of the rounds): %s the goal %.1fx\n", kp.name, nq.name, q.format(1, 2), meets(q.median >= kernelPathOfNFQueue), kernelPathOfNFQueue)
	}
	for _, s := range r.setups {
		if s.kind() != kindBPF {
			continue
		}
		if k, ok := r.kernelPathOf(s); ok {
			fmt.Fprintf(w, "%s / %s: %sx (median of the rounds)\n", s.name, k.name, r.ratiosTo(s, k).format(1, 2))
		}
		fwd := column(r.samples[s.name], s.forwardedShare)
		fmt.Fprintf(w, "%s: the eBPF program forwarded (%s) %s%% of the packets delivered\n", s.name, s.forwardAction(), fwd.format(100, 1))
	}
	for _, s := range r.setups {
		if s.fragmentEvery > 0 && okK {
			fmt.Fprintf(w, "%s / %s: %s (the slow path's share does not drag the fast one down when near 1)\n", s.name, kp.name, r.ratiosTo(s, kp).format(1, 2))
		}
	}
}

func meets(ok bool) string {
	if ok {
		return "meets"
	}
	return "DOES NOT MEET"
}

// writeLossFree prints each searched setup's loss-free rate and the
// ratios the goals compare: the kernel path over forwarding and nfqueue,
// the eBPF datapath over forwarding and the kernel path.
func (r *report) writeLossFree(w io.Writer) {
	if len(r.lossFree) == 0 {
		return
	}
	fmt.Fprintf(w, "\nloss-free (<%.1f%% loss, %v probes, offered %.0f-%.0f kpps):\n", 100*lossFreeMax, searchProbeTime, searchLow/1e3, searchHigh/1e3)
	found := map[string]*searchResult{}
	for _, f := range r.lossFree {
		found[f.setup] = f
		if f.best == 0 {
			fmt.Fprintf(w, "  %s: lost packets already at %.0f kpps offered\n", f.setup, searchLow/1e3)
		} else {
			limited := ""
			if f.senderLimited {
				limited = " (at least: the client could not offer more)"
			}
			fmt.Fprintf(w, "  %s: %.0f kpps%s\n", f.setup, f.best/1e3, limited)
		}
	}
	// ratio is a's loss-free rate over b's, "" when either has none;
	// marked when the client bounded either.
	ratio := func(a, b setup, unit string) string {
		x, y := found[a.name], found[b.name]
		if x == nil || y == nil || x.best == 0 || y.best == 0 {
			return ""
		}
		q := fmt.Sprintf("%.2f%s", x.best/y.best, unit)
		if x.senderLimited || y.senderLimited {
			q += " (client-bound)"
		}
		return q
	}
	fwd, _ := unpinned(r.setups, "")
	kp, _ := unpinned(r.setups, dataplaneKernel)
	nq, _ := unpinned(r.setups, dataplaneNFQueue)
	var parts []string
	if q := ratio(kp, fwd, ""); q != "" {
		parts = append(parts, fmt.Sprintf("kernel path / kernel forwarding: %s (goal %.2f)", q, kernelPathOfForwarding))
	}
	if q := ratio(kp, nq, "x"); q != "" {
		parts = append(parts, fmt.Sprintf("kernel path / nfqueue: %s (goal %.1fx)", q, kernelPathOfNFQueue))
	}
	for _, s := range searched(r.setups) {
		if s.kind() != kindBPF {
			continue
		}
		if q := ratio(s, fwd, "x"); q != "" {
			want, _, _ := goal(s)
			parts = append(parts, fmt.Sprintf("%s / kernel forwarding: %s (goal %.1fx)", s.name, q, want))
		}
		if q := ratio(s, kp, "x"); q != "" {
			parts = append(parts, fmt.Sprintf("%s / kernel path: %s", s.name, q))
		}
	}
	fmt.Fprintf(w, "  %s (NFQLB: about %d kpps)\n", strings.Join(parts, "; "), nfqlbLossFreeKpps)
}

// write prints the profile.
func (p *profileResult) write(w io.Writer) {
	if p.note != "" {
		fmt.Fprintf(w, "\nprofile of %s: none (%s)\n", p.setup, p.note)
		return
	}
	fmt.Fprintf(w, "\nprofile of %s (perf record -a, unbounded blast; the packet path's tasks: %s): %.2f us of CPU per received datagram (%d samples at %d Hz, %d datagrams)\n",
		p.setup, strings.Join(pathComms, " "), float64(p.perPacket.Nanoseconds())/1e3, p.pathSample, perfFrequency, p.datagrams)
	for i, s := range p.bySym {
		if i == topSymbols {
			break
		}
		fmt.Fprintf(w, "  %5.1f%%  %s\n", s.percent, s.what)
	}
}
