package soak

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// NoFault is the Kind of an item no fault explains (a broken connection
// judged outside every fault); no report row counts it.
const NoFault Kind = "(no fault)"

// Row is the report of one fault kind.
type Row struct {
	Kind  Kind
	Count int // events of the kind
	// The loss window over the kind's events (the longest loss run charged
	// to each event; an event without one counts as 0), nearest-rank
	// percentiles.
	LossP50, LossP99, LossMax time.Duration
	Bound                     time.Duration // the spec's documented bound
	StreamStallMax            time.Duration // the longest stream stall charged
	Broken                    int           // stream connections broken
	Why                       map[string]int
}

// Broken is a long-lived connection that broke: Kind is the kind of the
// fault it was judged by (NoFault: none), Why the reason it was given.
type Broken struct {
	Kind Kind
	Why  string
}

// Report is the per-fault-kind report, a row per spec in the order of
// specs. Each loss run and stall of a counts for the one fault that
// explains it, the one with the largest bound among the events it falls in
// (bound of that event's Seq alone; the first in the item's Events on a
// tie), not for every fault it overlaps: an event's loss is the longest run
// charged to it, and every event in events counts in its kind's
// percentiles, 0 when nothing was charged to it. A broken connection counts
// on its Kind's row, under its Why without details (every "Maglev moved..."
// as "Maglev moved its flow"). Events and broken connections of a kind
// without a spec (NoFault among them) are in no row: the report is of the
// planned faults; what no fault explains is judged elsewhere.
func Report(a Analysis, specs []Spec, events []Event, broken []Broken, bound func(seqs []int) time.Duration) []Row {
	blame := func(seqs []int) (int, bool) {
		best, found := 0, false
		for _, q := range seqs {
			if !found || bound([]int{q}) > bound([]int{best}) {
				best, found = q, true
			}
		}
		return best, found
	}
	loss, stall := map[int]time.Duration{}, map[int]time.Duration{}
	for _, r := range a.Runs {
		if q, ok := blame(r.Events); ok {
			loss[q] = max(loss[q], r.Loss)
		}
	}
	for _, st := range a.Stalls {
		if q, ok := blame(st.Events); ok {
			stall[q] = max(stall[q], st.RTT)
		}
	}
	byKind := map[Kind][]time.Duration{}
	rows := map[Kind]*Row{}
	for _, sp := range specs {
		rows[sp.Kind] = &Row{Kind: sp.Kind, Bound: sp.Bound, Why: map[string]int{}}
	}
	for _, ev := range events {
		r, ok := rows[ev.Kind]
		if !ok {
			continue
		}
		r.Count++
		byKind[ev.Kind] = append(byKind[ev.Kind], loss[ev.Seq])
		r.StreamStallMax = max(r.StreamStallMax, stall[ev.Seq])
	}
	for _, b := range broken {
		if r, ok := rows[b.Kind]; ok {
			r.Broken++
			r.Why[reasonClass(b.Why)]++
		}
	}
	out := make([]Row, 0, len(specs))
	for _, sp := range specs {
		r := rows[sp.Kind]
		r.LossP50, r.LossP99, r.LossMax = Percentiles(byKind[sp.Kind])
		out = append(out, *r)
	}
	return out
}

// reasonClass drops a broken connection's reason's details (the target a
// flow moved to), so that the report counts reasons by class.
func reasonClass(why string) string {
	if strings.HasPrefix(why, "Maglev moved") {
		return "Maglev moved its flow"
	}
	return why
}

// Percentiles returns the nearest-rank p50 and p99 and the maximum; zeros
// for no values. It sorts d.
func Percentiles(d []time.Duration) (p50, p99, top time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	rank := func(p int) time.Duration { return d[(p*len(d)+99)/100-1] }
	return rank(50), rank(99), d[len(d)-1]
}

// Markdown renders rows as one table, a line per fault kind.
func Markdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| fault | count | loss p50 | loss p99 | loss max | bound | longest stream stall | broken | why |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range rows {
		bound := "-"
		if r.Bound > 0 {
			bound = ms(r.Bound)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %d | %s |\n", cell(string(r.Kind)), r.Count,
			ms(r.LossP50), ms(r.LossP99), ms(r.LossMax), bound, ms(r.StreamStallMax), r.Broken, why(r.Why))
	}
	return b.String()
}

// ms prints a duration to the millisecond.
func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

func why(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s x%d", cell(k), m[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// cell makes s safe inside a table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}
